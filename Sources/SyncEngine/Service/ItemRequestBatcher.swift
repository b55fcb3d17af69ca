import UbiquityProtocol

/// Sends the item creations and commits that the engine's lanes ask for at the same time as one batch request
/// (``SyncService/applyItemBatch(_:in:)``), as the service's group committer writes concurrent commits in one
/// transaction: a ``RequestBatcher`` of item operations.
final class ItemRequestBatcher: Sendable {
    /// Sends one batch and returns the service's answer.
    typealias Send = @Sendable ([ItemBatchOperation]) async throws -> ItemBatchResponse

    private let batcher: RequestBatcher<ItemBatchOperation, ItemResponse>

    /// A batcher sending with `send`.
    init(send: @escaping Send) {
        batcher = RequestBatcher(
            maximumCount: ItemBatchRequest.maximumOperations, maximumBytes: Self.batchBytes,
            size: Self.estimatedSize(of:)
        ) { operations in
            let response = try await Self.sendFitting(operations, with: send)
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
        self.init(send: { operations in try await service.applyItemBatch(operations, in: container) })
    }

    /// How many operations wait for the batch after the one on its way.
    var queuedCount: Int { batcher.queuedCount }

    /// Creates an item, in a batch with the others asked for meanwhile.
    func createItem(_ request: CreateItemRequest) async throws -> ItemResponse {
        try await batcher.submit(.create(request))
    }

    /// Commits a version, in a batch with the others asked for meanwhile.
    func commit(_ version: VersionPayload) async throws -> ItemResponse {
        try await batcher.submit(.commit(version))
    }

    /// About the most bytes of operations one batch carries: well under the service's default limit for a body
    /// (8 MiB), which a few commits of large files could pass together though each fits alone.
    static let batchBytes = 2 << 20

    /// Roughly the bytes `operation` takes in a request: its manifest's chunks and the rest.
    static func estimatedSize(of operation: ItemBatchOperation) -> Int {
        let references: Int =
            switch operation {
            case .create(let request): request.version?.manifest.chunks.count ?? 0
            case .commit(let version):
                switch version.content {
                case .whole(let manifest): manifest.chunks.count
                case .delta(let delta): delta.operations.count + delta.addedCount
                }
            }
        return 1024 + references * 128
    }

    /// Sends `operations` as one batch; a batch the service finds too large (its limit may be lower than this
    /// side's estimate) is sent again one operation a request, each answered as before.
    private static func sendFitting(_ operations: [ItemBatchOperation], with send: Send) async throws
        -> ItemBatchResponse
    {
        do {
            return try await send(operations)
        } catch let error as ProtocolError where error.code == .bodyTooLarge && operations.count > 1 {
            var results: [ItemBatchResult] = []
            for operation in operations {
                do {
                    results.append(contentsOf: try await send([operation]).results)
                } catch let error as ProtocolError where error.code != .internalError {
                    results.append(.refused(error))
                }
            }
            return ItemBatchResponse(results: results, token: results.compactMap(\.response).last?.token)
        }
    }
}
