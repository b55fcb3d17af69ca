/// `POST /v1/containers/{container}/items/{item}/drafts/{version}`: the next chunks, in order, of a version still
/// being uploaded — a large file's first version goes up while it is cut, and the devices that will download it
/// can fetch what is there before the version is committed.
///
/// A draft is a hint the service keeps in memory for a while: it names chunks the service holds for the account,
/// never content of its own, and the commit of the version (or of any version of the item) ends it. A device that
/// missed a draft, or whose service forgot it, downloads the version when committed as it always does.
public struct DraftAppendRequest: Hashable, Sendable, Codable {
    /// How many chunks of the draft the device sent before these (the draft's length it extends).
    public var from: Int
    /// The chunks that follow, in the content's order.
    public var chunks: [ChunkReference]
    /// The content's length as its file measured when the upload began, when known: a device that would not
    /// download a file of that size at once leaves the draft alone.
    public var total: Int64?

    /// Creates a request.
    public init(from: Int, chunks: [ChunkReference], total: Int64? = nil) {
        self.from = from
        self.chunks = chunks
        self.total = total
    }
}

/// `GET /v1/containers/{container}/items/{item}/drafts/{version}?from=N`: the chunks of a draft from the `N`th on,
/// at most ``DraftPage/pageLimit`` of them.
public struct DraftPage: Hashable, Sendable, Codable {
    /// The most chunks a page holds.
    public static let pageLimit = 10_000
    /// The most chunks a draft holds: a longer upload's draft stops growing (the rest comes with the commit).
    public static let draftLimit = 1_000_000

    /// The draft's length: how many chunks the service holds of it in all.
    public var count: Int
    /// The chunks from the asked position on.
    public var chunks: [ChunkReference]
    /// The content's length as the uploading device last told it, when it did.
    public var total: Int64?

    /// Creates a page.
    public init(count: Int, chunks: [ChunkReference], total: Int64? = nil) {
        self.count = count
        self.chunks = chunks
        self.total = total
    }
}
