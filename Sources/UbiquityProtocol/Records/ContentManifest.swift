/// What a version's content is made of: the ordered chunks of a file, or the member tree of a package.
///
/// On the wire: `{"type": "file", "chunks": [{"hash": "…", "size": 65536}, …]}` or
/// `{"type": "package", "entries": [{"path": "Contents/a.json", "kind": "file", "chunks": […]}, …]}`.
/// Decoding checks ``validate()``, so a decoded manifest is always valid.
public enum ContentManifest: Hashable, Sendable {
    /// A flat file's chunks, in order.
    case file([ChunkReference])
    /// A package's members.
    case package([PackageEntry])

    /// Every chunk the content needs, in order (members in the order listed), duplicates kept.
    public var chunks: [ChunkReference] {
        switch self {
        case .file(let chunks): chunks
        case .package(let entries): entries.flatMap(\.chunks)
        }
    }

    /// The content's length in bytes: the sum of every chunk's size (saturating at `Int64.max`; a valid
    /// manifest never gets there).
    public var totalSize: Int64 {
        var total: Int64 = 0
        for chunk in chunks {
            let (sum, overflow) = total.addingReportingOverflow(chunk.size)
            total = overflow ? .max : sum
        }
        return total
    }

    /// Checks the manifest is consistent.
    /// - Throws: ``ProtocolError/Code/invalidManifest`` for a negative chunk size, a total that overflows,
    ///   a package member that is a package, a directory member with chunks, or two members whose paths
    ///   share a ``ItemPath/collisionKey``.
    public func validate() throws(ProtocolError) {
        var total: Int64 = 0
        for chunk in chunks {
            guard chunk.size >= 0 else {
                throw ProtocolError(.invalidManifest, "chunk \(chunk.hash) has a negative size")
            }
            let (sum, overflow) = total.addingReportingOverflow(chunk.size)
            guard !overflow else { throw ProtocolError(.invalidManifest, "the content's total size overflows") }
            total = sum
        }
        guard case .package(let entries) = self else { return }
        var seen: Set<String> = []
        for entry in entries {
            guard entry.kind != .package else {
                throw ProtocolError(.invalidManifest, "package member \(entry.path) is itself a package")
            }
            guard entry.kind == .file || entry.chunks.isEmpty else {
                throw ProtocolError(.invalidManifest, "directory member \(entry.path) has chunks")
            }
            guard seen.insert(entry.path.collisionKey).inserted else {
                throw ProtocolError(.invalidManifest, "package member \(entry.path) is listed twice")
            }
        }
    }
}

extension ContentManifest: Codable {
    private enum CodingKeys: String, CodingKey { case type, chunks, entries }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(String.self, forKey: .type) {
        case "file": self = .file(try container.decode([ChunkReference].self, forKey: .chunks))
        case "package": self = .package(try container.decode([PackageEntry].self, forKey: .entries))
        case let other: throw ProtocolError(.invalidManifest, "unknown manifest type \"\(other)\"")
        }
        try validate()
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .file(let chunks):
            try container.encode("file", forKey: .type)
            try container.encode(chunks, forKey: .chunks)
        case .package(let entries):
            try container.encode("package", forKey: .type)
            try container.encode(entries, forKey: .entries)
        }
    }
}
