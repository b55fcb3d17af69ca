import Crypto
import UbiquityProtocol

extension ChunkHash {
    /// The hash of a SHA-256 digest, which always has the 32 bytes ``ChunkHash/init(digest:)`` asks for.
    init(_ digest: SHA256.Digest) {
        do {
            try self.init(digest: digest)
        } catch {
            preconditionFailure("a SHA-256 digest has 32 bytes: \(error)")
        }
    }
}

extension ChunkReference {
    /// The reference of `bytes`: their SHA-256 and their length.
    init(of bytes: UnsafeRawBufferPointer) {
        var hasher = SHA256()
        hasher.update(bufferPointer: bytes)
        self.init(hash: ChunkHash(hasher.finalize()), size: Int64(bytes.count))
    }
}
