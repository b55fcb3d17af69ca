import Foundation

/// `POST /v1/containers/{container}/batch`: many small items created or committed in one request.
///
/// A device that finds thousands of new files would otherwise send a request (and wait for a transaction) per item.
/// The service applies the operations in order, in as few transactions as it can, each operation on its own: one that
/// is refused (a path taken, chunks missing, a version of an unknown item) changes nothing and refuses only itself,
/// and its result says why, as the single-item route's error would. Every result is answered only once the
/// transaction holding it is durable.
///
/// ```json
/// {"operations": [{"create": {"id": "…", "path": "Documents/a.txt", "kind": "file", "version": {…}}},
///                 {"commit": {"id": "…", "itemID": "…", …}}]}
/// ```
///
/// A small file's chunks may travel in the same request (`chunks`, each `{"hash": "…", "data": "<base64>"}`; at most
/// ``maximumInlineChunks`` and ``maximumInlineBytes``), so creating or editing it costs one request, not an upload and
/// then a commit. The service stores the chunks the operations name durably before the operations are applied and
/// records them in the same transaction. A chunk whose bytes are not
/// its hash's is not stored, and each operation whose version names it is refused alone with
/// ``ProtocolError/Code/chunkHashMismatch``; one that has no room in the quota refuses, with
/// ``ProtocolError/Code/quotaExceeded``, the operations that name it.
public struct ItemBatchRequest: Hashable, Sendable, Codable {
    /// The most operations one request may hold.
    public static let maximumOperations = 1_000
    /// The most bytes of chunks (decoded) one request may carry in `chunks`.
    public static let maximumInlineBytes = 4 << 20
    /// The most chunks one request may carry in `chunks`.
    public static let maximumInlineChunks = 10_000

    /// The operations, applied in this order.
    public var operations: [ItemBatchOperation]
    /// Chunks the operations' versions name, sent with them.
    public var chunks: [InlineChunk]

    /// Creates a request.
    public init(operations: [ItemBatchOperation], chunks: [InlineChunk] = []) {
        self.operations = operations
        self.chunks = chunks
    }

    private enum CodingKeys: String, CodingKey {
        case operations, chunks
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        operations = try container.decode([ItemBatchOperation].self, forKey: .operations)
        chunks = try container.decodeIfPresent([InlineChunk].self, forKey: .chunks) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(operations, forKey: .operations)
        if !chunks.isEmpty { try container.encode(chunks, forKey: .chunks) }
    }

    /// Checks the request's size: at least one operation, at most ``maximumOperations``.
    /// - Throws: ``ProtocolError/Code/malformedRequest``.
    public func validate() throws(ProtocolError) {
        guard !operations.isEmpty else { throw ProtocolError(.malformedRequest, "a batch holds no operations") }
        guard operations.count <= Self.maximumOperations else {
            throw ProtocolError(
                .malformedRequest,
                "a batch holds \(operations.count) operations, more than \(Self.maximumOperations)")
        }
        guard chunks.count <= Self.maximumInlineChunks else {
            throw ProtocolError(
                .bodyTooLarge,
                "a batch carries \(chunks.count) chunks, more than \(Self.maximumInlineChunks); upload them first")
        }
        let inline = chunks.reduce(0) { $0 + $1.data.count }
        guard inline <= Self.maximumInlineBytes else {
            throw ProtocolError(
                .bodyTooLarge,
                "a batch carries \(inline) bytes of chunks, more than \(Self.maximumInlineBytes); upload them first")
        }
    }
}

/// A chunk's bytes sent in an ``ItemBatchRequest`` beside the operations whose versions name it.
public struct InlineChunk: Hashable, Sendable, Codable {
    /// The SHA-256 of `data`, as the versions name it.
    public var hash: ChunkHash
    /// The bytes (standard base64 with padding on the wire).
    public var data: Data

    /// Creates a chunk to send.
    public init(hash: ChunkHash, data: Data) {
        self.hash = hash
        self.data = data
    }
}

/// One operation of an ``ItemBatchRequest``.
public enum ItemBatchOperation: Hashable, Sendable, Codable {
    /// Creates an item, with its first version when it has one (`POST …/items`).
    case create(CreateItemRequest)
    /// Commits a new version of an item (`POST …/items/{item}/versions`), its manifest whole or as a delta against
    /// a version of the item the service keeps.
    case commit(VersionPayload)

    private enum CodingKeys: String, CodingKey {
        case create, commit
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch (container.contains(.create), container.contains(.commit)) {
        case (true, false): self = .create(try container.decode(CreateItemRequest.self, forKey: .create))
        case (false, true): self = .commit(try container.decode(VersionPayload.self, forKey: .commit))
        default:
            throw ProtocolError(.malformedRequest, "a batch operation is either {\"create\": …} or {\"commit\": …}")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .create(let request): try container.encode(request, forKey: .create)
        case .commit(let version): try container.encode(version, forKey: .commit)
        }
    }
}

/// The answer to an ``ItemBatchRequest``: a result for each operation, in the same order.
public struct ItemBatchResponse: Hashable, Sendable, Codable {
    /// Each operation's result.
    public var results: [ItemBatchResult]
    /// The container's feed position after the batch; `nil` when every operation was refused.
    public var token: ChangeToken?

    /// Creates a response.
    public init(results: [ItemBatchResult], token: ChangeToken?) {
        self.results = results
        self.token = token
    }
}

/// What one operation of a batch did: what the single-item route would have answered, or why it was refused.
public enum ItemBatchResult: Hashable, Sendable, Codable {
    /// Applied: the item as it now is.
    case applied(ItemResponse)
    /// Refused, changing nothing.
    case refused(ProtocolError)

    private enum CodingKeys: String, CodingKey {
        case applied, refused
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let response = try container.decodeIfPresent(ItemResponse.self, forKey: .applied) {
            self = .applied(response)
        } else {
            self = .refused(try container.decode(ProtocolError.self, forKey: .refused))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .applied(let response): try container.encode(response, forKey: .applied)
        case .refused(let error): try container.encode(error, forKey: .refused)
        }
    }

    /// The item's response when the operation was applied.
    public var response: ItemResponse? {
        if case .applied(let response) = self { return response }
        return nil
    }

    /// Why the operation was refused, when it was.
    public var error: ProtocolError? {
        if case .refused(let error) = self { return error }
        return nil
    }
}

extension ItemBatchOperation {
    /// Commits `version`, its manifest whole.
    public static func commit(_ version: VersionRecord) -> Self { .commit(VersionPayload(version)) }

    /// The refusal, among `refused` (by chunk), of the first chunk the operation names that has one.
    public func refusal(among refused: [ChunkHash: ProtocolError]) -> ProtocolError? {
        refused.isEmpty ? nil : namedChunks.lazy.compactMap { refused[$0.hash] }.first
    }

    /// The operation with its version saved by `device`, whatever it says (as the service records it: by the device
    /// asking).
    public func saved(by device: SavingDevice) -> ItemBatchOperation {
        switch self {
        case .create(var create):
            create.version?.savingDevice = device
            return .create(create)
        case .commit(var version):
            version.savingDevice = device
            return .commit(version)
        }
    }

    /// The chunks the operation's version names as its own: every chunk of a whole manifest, the chunks a delta
    /// adds to its base; none for a creation without a version.
    public var namedChunks: [ChunkReference] {
        switch self {
        case .create(let request):
            return request.version?.manifest.chunks ?? []
        case .commit(let version):
            switch version.content {
            case .whole(let manifest): return manifest.chunks
            case .delta(let delta):
                return delta.operations.flatMap { operation -> [ChunkReference] in
                    if case .add(let chunks) = operation { chunks } else { [] }
                }
            }
        }
    }
}
