/// The SHA-256 of a chunk (or of a whole content), written as exactly 64 lowercase hexadecimal characters.
///
/// Chunks are stored and deduplicated by this hash; the server verifies it on arrival.
public struct ChunkHash: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The 64 lowercase hexadecimal characters.
    public let string: String

    /// Validates a hash written in hexadecimal.
    /// - Throws: ``ProtocolError/Code/invalidChunkHash`` unless `string` is exactly 64 characters of `0-9a-f`.
    public init(_ string: String) throws(ProtocolError) {
        let bytes = string.utf8
        guard bytes.count == 64,
            bytes.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else {
            throw ProtocolError(.invalidChunkHash, "not 64 lowercase hex characters: \"\(string.prefix(80))\"")
        }
        self.string = string
    }

    /// Wraps a 32-byte digest.
    /// - Throws: ``ProtocolError/Code/invalidChunkHash`` unless `digest` has exactly 32 bytes.
    public init(digest: some Sequence<UInt8>) throws(ProtocolError) {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        guard text.count == 64 else {
            throw ProtocolError(.invalidChunkHash, "a SHA-256 digest has 32 bytes, not \(text.count / 2)")
        }
        self.string = String(decoding: text, as: UTF8.self)
    }

    /// The 32 bytes of the digest.
    public var digest: [UInt8] {
        let bytes = Array(string.utf8)
        func nibble(_ byte: UInt8) -> UInt8 { byte <= 57 ? byte - 48 : byte - 87 }
        return stride(from: 0, to: 64, by: 2).map { nibble(bytes[$0]) << 4 | nibble(bytes[$0 + 1]) }
    }

    public var description: String { string }

    public static func < (lhs: ChunkHash, rhs: ChunkHash) -> Bool { lhs.string < rhs.string }

    public init(from decoder: any Decoder) throws {
        try self.init(decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(string)
    }
}
