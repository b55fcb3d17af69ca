/// One page of a container's change feed: the answer to `GET …/changes?since=TOKEN&limit=N`.
public struct ChangePage: Hashable, Sendable, Codable {
    /// The changes after the requested token, oldest first.
    public var changes: [Change]
    /// The token to ask with next; it names the position after the last change of this page.
    public var nextToken: ChangeToken
    /// Whether more changes follow right away (ask again with ``nextToken`` without waiting for a push).
    public var hasMore: Bool
    /// The records of small first versions the page's changes name (a new item's first content, as the service
    /// holds it when the page is read, while the item is still at the path it was made at with that version
    /// current), so that a device hearing of many new small items need not ask for each (a hint: a device may always
    /// ask, and the service may leave any out).
    public var versions: [VersionRecord]
    /// The bytes of chunks `versions` name, when the page was asked for with `chunkBytes=N`: of versions another
    /// device saved, up to `N` bytes in all (at most ``maximumChunkBytes``), so that a device hearing of new small
    /// files gets their content with the news (a hint too: a chunk left out is downloaded as usual).
    public var chunks: [InlineChunk]

    /// The most bytes of chunks a page carries, whatever is asked for.
    public static let maximumChunkBytes = 1 << 20

    /// The chunks a page asked for with `chunkBytes=budget` carries: those of `versions` that a device other than
    /// `asker` saved, each once, in order, a version's all or none, up to `budget` bytes (at most
    /// ``maximumChunkBytes``) by the sizes the versions name.
    public static func carriedChunks(of versions: [VersionRecord], savedByOtherThan asker: DeviceID?, upTo budget: Int)
        -> [ChunkReference]
    {
        var chosen: [ChunkReference] = []
        var seen = Set<ChunkHash>()
        var left = min(budget, maximumChunkBytes)
        for version in versions where version.savingDevice.id != asker {
            let new = version.manifest.chunks.filter { !seen.contains($0.hash) }
            let size = new.reduce(Int64(0)) { $0 + $1.size }
            guard size <= left else { continue }
            left -= Int(size)
            for chunk in new where seen.insert(chunk.hash).inserted { chosen.append(chunk) }
        }
        return chosen
    }

    /// Creates a page.
    public init(
        changes: [Change], nextToken: ChangeToken, hasMore: Bool, versions: [VersionRecord] = [],
        chunks: [InlineChunk] = []
    ) {
        self.changes = changes
        self.nextToken = nextToken
        self.hasMore = hasMore
        self.versions = versions
        self.chunks = chunks
    }

    private enum CodingKeys: String, CodingKey {
        case changes, nextToken, hasMore, versions, chunks
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        changes = try container.decode([Change].self, forKey: .changes)
        nextToken = try container.decode(ChangeToken.self, forKey: .nextToken)
        hasMore = try container.decode(Bool.self, forKey: .hasMore)
        versions = try container.decodeIfPresent([VersionRecord].self, forKey: .versions) ?? []
        chunks = try container.decodeIfPresent([InlineChunk].self, forKey: .chunks) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(changes, forKey: .changes)
        try container.encode(nextToken, forKey: .nextToken)
        try container.encode(hasMore, forKey: .hasMore)
        if !versions.isEmpty { try container.encode(versions, forKey: .versions) }
        if !chunks.isEmpty { try container.encode(chunks, forKey: .chunks) }
    }
}
