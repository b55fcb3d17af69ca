/// One chunk of content: its hash and its length in bytes.
public struct ChunkReference: Hashable, Sendable, Codable {
    /// The SHA-256 of the chunk's bytes.
    public var hash: ChunkHash
    /// The chunk's length in bytes; never negative in a valid ``ContentManifest``.
    public var size: Int64

    /// Creates a reference.
    public init(hash: ChunkHash, size: Int64) {
        self.hash = hash
        self.size = size
    }
}
