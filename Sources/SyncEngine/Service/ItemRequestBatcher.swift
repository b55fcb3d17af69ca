import Synchronization
import UbiquityProtocol

/// Sends the item creations and commits that the engine's lanes ask for at the same time as one batch request
/// (``SyncService/applyItemBatch(_:in:)``), as the service's group committer writes concurrent commits in one
/// transaction.
///
/// The first caller with nothing on its way sends: its own operation at once, then, batch after batch, whatever other
/// callers queued meanwhile (up to ``ItemBatchRequest/maximumOperations`` a batch), until the queue is empty. A lone
/// request waits for nothing. Each caller gets its own operation's answer, or its own refusal thrown as the single
/// request would have thrown it; a failure of the request itself (the service unreachable) is thrown to every caller
/// of that batch. No task of its own: the batches go from a caller's task, on the engine's executor.
final class ItemRequestBatcher: Sendable {
    private struct Waiting: Sendable {
        let operation: ItemBatchOperation
        let deliver: @Sendable (Result<ItemResponse, any Error>) -> Void
    }

    private struct State {
        var queue: [Waiting] = []
        var isSending = false
    }

    /// Sends one batch and returns the service's answer.
    typealias Send = @Sendable ([ItemBatchOperation]) async throws -> ItemBatchResponse

    private let send: Send
    private let state = Mutex(State())

    /// A batcher sending with `send`.
    init(send: @escaping Send) { self.send = send }

    /// A batcher sending to `service`'s `container`.
    convenience init(service: any SyncService, container: ContainerID) {
        self.init(send: { operations in try await service.applyItemBatch(operations, in: container) })
    }

    /// How many operations wait for the batch after the one on its way.
    var queuedCount: Int { state.withLock { $0.queue.count } }

    /// Creates an item, in a batch with the others asked for meanwhile.
    func createItem(_ request: CreateItemRequest) async throws -> ItemResponse {
        try await submit(.create(request))
    }

    /// Commits a version, in a batch with the others asked for meanwhile.
    func commit(_ version: VersionRecord) async throws -> ItemResponse {
        try await submit(.commit(version))
    }

    private func submit(_ operation: ItemBatchOperation) async throws -> ItemResponse {
        while true {
            // With nothing on its way, this caller sends.
            let own = Mutex<Result<ItemResponse, any Error>?>(nil)
            let sends = state.withLock { state in
                guard !state.isSending else { return false }
                state.isSending = true
                state.queue.append(Waiting(operation: operation, deliver: { result in own.withLock { $0 = result } }))
                return true
            }
            if sends {
                await sendBatches()
                guard let result = own.withLock({ $0 }) else {
                    throw ProtocolError(.internalError, "a batch ended without answering its sender's operation")
                }
                return try result.get()
            }
            // Else it waits in the queue of the batch on its way, unless that one has finished meanwhile and left no
            // one sending: then it tries again to send itself (checked and queued under one lock, so no operation
            // is ever queued with no one to send it).
            let answer = await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<ItemResponse, any Error>?, Never>) in
                let queued = state.withLock { state in
                    guard state.isSending else { return false }
                    state.queue.append(
                        Waiting(operation: operation, deliver: { result in continuation.resume(returning: result) }))
                    return true
                }
                if !queued { continuation.resume(returning: nil) }
            }
            if let answer { return try answer.get() }
        }
    }

    /// Sends what is queued, batch after batch, until nothing is.
    private func sendBatches() async {
        while true {
            let batch: [Waiting] = state.withLock { state in
                let batch = Array(state.queue.prefix(ItemBatchRequest.maximumOperations))
                state.queue.removeFirst(batch.count)
                if batch.isEmpty { state.isSending = false }
                return batch
            }
            if batch.isEmpty { return }
            do {
                let response = try await send(batch.map(\.operation))
                guard response.results.count == batch.count else {
                    throw ProtocolError(
                        .internalError,
                        "the service answered \(response.results.count) results for a batch of \(batch.count)")
                }
                for (waiting, result) in zip(batch, response.results) {
                    switch result {
                    case .applied(let answer): waiting.deliver(.success(answer))
                    case .refused(let error): waiting.deliver(.failure(error))
                    }
                }
            } catch {
                for waiting in batch { waiting.deliver(.failure(error)) }
            }
        }
    }
}
