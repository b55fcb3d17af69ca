import UbiquityProtocol

/// A file's content as the sync engine uploads it: its chunks, its length and the SHA-256 of the whole content.
public struct ChunkedContent: Sendable, Hashable {
    /// The chunks, in order; their sizes add up to ``size``.
    public var chunks: [ChunkReference]
    /// The content's length in bytes.
    public var size: Int64
    /// The SHA-256 of the whole content (not of its chunks), which a download checks after assembling it.
    public var contentHash: ChunkHash

    /// Creates a chunked content.
    /// - Parameters:
    ///   - chunks: The chunks, in order.
    ///   - size: The content's length.
    ///   - contentHash: The SHA-256 of the whole content.
    public init(chunks: [ChunkReference], size: Int64, contentHash: ChunkHash) {
        self.chunks = chunks
        self.size = size
        self.contentHash = contentHash
    }

    /// The content's manifest: `.file(chunks)`.
    public var manifest: ContentManifest { .file(chunks) }
}
