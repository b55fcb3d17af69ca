import Foundation

/// `POST /v1/containers/{container}/chunks`: several chunks in one binary body, so that a large upload costs one
/// request (and one flush on the service) per few megabytes instead of one per chunk.
///
/// The body is the chunks one after another, each as its SHA-256 (32 bytes), its length (4 bytes, big-endian)
/// and its bytes. The service stores each chunk whose bytes hash to its SHA-256, all of them durably before it
/// answers; if one does not, none of the batch is stored.
public enum ChunkBatch {
    /// The body's content type.
    public static let contentType = "application/vnd.ubiquity.chunks"
    /// The length of one chunk's header: its SHA-256 and its length.
    public static let headerBytes = 36

    /// The header of one chunk.
    public static func header(_ hash: ChunkHash, size: Int) -> [UInt8] {
        var bytes = hash.digest
        let length = UInt32(size)
        bytes += [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
        return bytes
    }

    /// Reads one chunk's header.
    /// - Throws: ``ProtocolError/Code/malformedRequest`` unless `bytes` holds exactly ``headerBytes`` bytes.
    public static func parseHeader(_ bytes: some Collection<UInt8>) throws(ProtocolError) -> (ChunkHash, Int) {
        guard bytes.count == headerBytes else {
            throw ProtocolError(.malformedRequest, "a chunk header is \(headerBytes) bytes")
        }
        let hash = try ChunkHash(digest: bytes.prefix(32))
        let size = bytes.dropFirst(32).reduce(0) { $0 << 8 | Int($1) }
        return (hash, size)
    }
}

/// The answer to a ``ChunkBatch`` upload.
public struct ChunkBatchResponse: Hashable, Sendable, Codable {
    /// How many chunks the body held (stored now, or already stored).
    public var received: Int

    /// Creates an answer.
    public init(received: Int) { self.received = received }
}

/// `POST /v1/containers/{container}/chunks/fetch`: several chunks downloaded in one request — the engine's
/// downloads of many small files, or of a large file's next chunks, ask together instead of one request a chunk.
///
/// The answer is a ``ChunkBatch`` body: each chunk the account has, in the order asked (each once), as its SHA-256,
/// its length and its bytes; a chunk the account lacks is left out. The device checks every chunk against its hash.
public struct ChunkFetchRequest: Hashable, Sendable, Codable {
    /// The most chunks one request may ask for.
    public static let maximumChunks = 1_000

    /// The chunks asked for.
    public var hashes: [ChunkHash]

    /// Creates a request.
    public init(hashes: [ChunkHash]) { self.hashes = hashes }

    /// Checks the request's size: at least one chunk, at most ``maximumChunks``.
    /// - Throws: ``ProtocolError/Code/malformedRequest``.
    public func validate() throws(ProtocolError) {
        guard !hashes.isEmpty else { throw ProtocolError(.malformedRequest, "the request asks for no chunks") }
        guard hashes.count <= Self.maximumChunks else {
            throw ProtocolError(
                .malformedRequest, "the request asks for \(hashes.count) chunks, more than \(Self.maximumChunks)")
        }
    }
}
