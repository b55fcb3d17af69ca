import UbiquityProtocol

/// Sends the item creations and commits that the engine's lanes ask for at the same time as one batch request
/// (``SyncService/applyItemBatch(_:in:)``), as the service's group committer writes concurrent
/// commits in one transaction: a ``RequestBatcher`` of item operations, each with the chunks it brings.
final class ItemRequestBatcher: Sendable {
    /// Sends one batch and returns the service's answer.
    typealias Send = @Sendable (ItemBatchRequest) async throws -> ItemBatchResponse

    /// An operation and the chunks its version names that go with it (``ItemBatchRequest/chunks``).
    struct Entry: Sendable {
        var operation: ItemBatchOperation
        var chunks: [InlineChunk]
    }

    private let batcher: RequestBatcher<Entry, ItemResponse>

    /// A batcher sending with `send`.
    init(send: @escaping Send) {
        batcher = RequestBatcher(
            maximumCount: ItemBatchRequest.maximumOperations, maximumBytes: Self.batchBytes,
            size: Self.estimatedSize(of:)
        ) { entries in
            let response = try await Self.sendFitting(entries, with: send)
            return response.results.map { result in
                switch result {
                case .applied(let answer): .success(answer)
                case .refused(let error): .failure(error)
                }
            }
        }
    }

    /// A batcher sending to `service`'s `container`.
    convenience init(service: any SyncService, container: ContainerID) {
        self.init(send: { request in try await service.applyItemBatch(request, in: container) })
    }

    /// How many operations wait for the batch after the one on its way.
    var queuedCount: Int { batcher.queuedCount }

    /// Creates an item, in a batch with the others asked for meanwhile, with chunks its version names that the
    /// service is to store first.
    func createItem(_ request: CreateItemRequest, bringing chunks: [InlineChunk] = []) async throws -> ItemResponse {
        try await batcher.submit(Entry(operation: .create(request), chunks: chunks))
    }

    /// Commits a version, in a batch with the others asked for meanwhile, with chunks it names that the service is to
    /// store first.
    func commit(_ version: VersionPayload, bringing chunks: [InlineChunk] = []) async throws -> ItemResponse {
        try await batcher.submit(Entry(operation: .commit(version), chunks: chunks))
    }

    /// About the most bytes of operations one batch carries: under the service's default limit for a body (8 MiB),
    /// which a few commits of large files could pass together though each fits alone, and with the chunks brought
    /// under ``ItemBatchRequest/maximumInlineBytes``: several hundred small files with their chunks.
    static let batchBytes = 5 << 20

    /// Roughly the bytes `entry` takes in a request: its manifest's chunks, the rest, and the chunks it brings (in
    /// base64).
    static func estimatedSize(of entry: Entry) -> Int {
        let brought = entry.chunks.reduce(0) { $0 + 100 + $1.data.count / 3 * 4 + 4 }
        let references: Int =
            switch entry.operation {
            case .create(let request): request.version?.manifest.chunks.count ?? 0
            case .commit(let version):
                switch version.content {
                case .whole(let manifest): manifest.chunks.count
                case .delta(let delta): delta.operations.count + delta.addedCount
                }
            }
        return 1024 + references * 128 + brought
    }

    /// The request for `entries`: their operations in order, and the chunks they bring, each once.
    static func request(_ entries: [Entry]) -> ItemBatchRequest {
        var seen = Set<ChunkHash>()
        return ItemBatchRequest(
            operations: entries.map(\.operation),
            chunks: entries.flatMap(\.chunks).filter { seen.insert($0.hash).inserted })
    }

    /// Sends `entries` as one batch; a batch the service finds too large (its limit may be lower than this
    /// side's estimate) is sent again one operation a request, each answered as before.
    private static func sendFitting(_ entries: [Entry], with send: Send) async throws -> ItemBatchResponse {
        do {
            return try await send(request(entries))
        } catch let error as ProtocolError where error.code == .bodyTooLarge && entries.count > 1 {
            var results: [ItemBatchResult] = []
            for entry in entries {
                do {
                    results.append(contentsOf: try await send(request([entry])).results)
                } catch let error as ProtocolError where error.code != .internalError {
                    results.append(.refused(error))
                }
            }
            return ItemBatchResponse(results: results, token: results.compactMap(\.response).last?.token)
        }
    }
}
