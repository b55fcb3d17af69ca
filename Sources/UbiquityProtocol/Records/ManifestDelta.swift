/// A file's chunk list written as changes to another version's: runs of the base's chunks kept in place, and the
/// chunks that are new. One byte inserted in the middle of a 64 MiB file changes one or two of its thousand chunks;
/// its delta is three operations instead of a thousand references.
///
/// On the wire: `{"base": "…", "ops": [{"copy": {"from": 0, "count": 511}}, {"add": [{"hash": …, "size": …}]},
/// {"copy": {"from": 512, "count": 511}}]}`.
public struct ManifestDelta: Hashable, Sendable, Codable {
    /// One step of rebuilding the chunk list, in order.
    public enum Operation: Hashable, Sendable {
        /// The base's chunks `from ..< from + count`.
        case copy(from: Int, count: Int)
        /// Chunks the base does not hold at this place.
        case add([ChunkReference])
    }

    /// The version whose chunk list the operations read from.
    public var base: VersionID
    /// The operations, in order.
    public var operations: [Operation]

    /// Creates a delta.
    public init(base: VersionID, operations: [Operation]) {
        self.base = base
        self.operations = operations
    }

    /// The delta that rebuilds `target` from `base` (version `baseID`): each chunk of `target` is copied from the
    /// base where the base holds it (continuing the run before it when it can), else added.
    public init(from base: [ChunkReference], baseID: VersionID, to target: [ChunkReference]) {
        var firstPosition: [ChunkReference: Int] = [:]
        for (position, chunk) in base.enumerated() where firstPosition[chunk] == nil { firstPosition[chunk] = position }
        var operations: [Operation] = []
        for chunk in target {
            if case .copy(let from, let count) = operations.last, from + count < base.count,
                base[from + count] == chunk
            {
                operations[operations.count - 1] = .copy(from: from, count: count + 1)
            } else if let position = firstPosition[chunk] {
                operations.append(.copy(from: position, count: 1))
            } else if case .add(let added) = operations.last {
                operations[operations.count - 1] = .add(added + [chunk])
            } else {
                operations.append(.add([chunk]))
            }
        }
        self.init(base: baseID, operations: operations)
    }

    /// How many chunk references the delta writes out (an estimate of its size next to a whole list's).
    public var addedCount: Int {
        operations.reduce(0) { total, operation in
            if case .add(let chunks) = operation { total + chunks.count } else { total }
        }
    }

    /// The chunk list the delta rebuilds from `base`.
    /// - Throws: ``ProtocolError/Code/invalidManifest`` for a copy outside the base, an empty operation, or a list
    ///   longer than four times the base's plus what is added (a small delta may not stand for a huge list).
    public func apply(to base: [ChunkReference]) throws(ProtocolError) -> [ChunkReference] {
        let limit = 4 * base.count + addedCount
        var chunks: [ChunkReference] = []
        for operation in operations {
            switch operation {
            case .copy(let from, let count):
                guard from >= 0, count > 0, from <= base.count, count <= base.count - from else {
                    throw ProtocolError(
                        .invalidManifest,
                        "a delta copies \(count) chunk(s) from \(from) of a base holding \(base.count)")
                }
                guard chunks.count + count <= limit else {
                    throw ProtocolError(.invalidManifest, "a delta rebuilds more than \(limit) chunks")
                }
                chunks += base[from..<from + count]
            case .add(let added):
                guard !added.isEmpty else { throw ProtocolError(.invalidManifest, "a delta adds no chunks") }
                chunks += added
            }
        }
        return chunks
    }

    private enum CodingKeys: String, CodingKey { case base, ops }
    private enum OperationKeys: String, CodingKey { case copy, add }
    private enum RangeKeys: String, CodingKey { case from, count }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        base = try container.decode(VersionID.self, forKey: .base)
        var list = try container.nestedUnkeyedContainer(forKey: .ops)
        var operations: [Operation] = []
        while !list.isAtEnd {
            let operation = try list.nestedContainer(keyedBy: OperationKeys.self)
            switch (operation.contains(.copy), operation.contains(.add)) {
            case (true, false):
                let range = try operation.nestedContainer(keyedBy: RangeKeys.self, forKey: .copy)
                operations.append(
                    .copy(
                        from: try range.decode(Int.self, forKey: .from),
                        count: try range.decode(Int.self, forKey: .count)))
            case (false, true):
                operations.append(.add(try operation.decode([ChunkReference].self, forKey: .add)))
            default:
                throw ProtocolError(.invalidManifest, "a delta operation is either {\"copy\": …} or {\"add\": …}")
            }
        }
        self.operations = operations
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(base, forKey: .base)
        var list = container.nestedUnkeyedContainer(forKey: .ops)
        for operation in operations {
            var entry = list.nestedContainer(keyedBy: OperationKeys.self)
            switch operation {
            case .copy(let from, let count):
                var range = entry.nestedContainer(keyedBy: RangeKeys.self, forKey: .copy)
                try range.encode(from, forKey: .from)
                try range.encode(count, forKey: .count)
            case .add(let chunks):
                try entry.encode(chunks, forKey: .add)
            }
        }
    }
}
