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

    /// Creates a request.
    public init(from: Int, chunks: [ChunkReference]) {
        self.from = from
        self.chunks = chunks
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

    /// Creates a page.
    public init(count: Int, chunks: [ChunkReference]) {
        self.count = count
        self.chunks = chunks
    }
}
