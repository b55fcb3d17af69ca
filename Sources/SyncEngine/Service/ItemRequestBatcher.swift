import Synchronization
import UbiquityProtocol

/// Sends the item creations and commits that the engine's lanes ask for at the same time as one batch request
/// (``SyncService/applyItemBatch(_:in:)``), as the service's group committer writes concurrent commits in one
/// transaction.
///
/// The first caller with nothing on its way sends its own operation at once, with whatever else is queued (up to
/// ``ItemBatchRequest/maximumOperations`` a batch and about ``batchBytes``); when that batch is answered, the oldest
/// waiting caller sends the next. A lone request waits for nothing. Each caller gets its own operation's answer, or
/// its own refusal thrown as the single request would have thrown it; a failure of the request itself (the service
/// unreachable) is thrown to every caller of that batch. No task of its own: the batches go from a caller's task, on
/// the engine's executor.
final class ItemRequestBatcher: Sendable {
    /// One caller's place in the queue: its operation, and how it hears of its answer or that it sends next.
    private struct Waiting: Sendable {
        let operation: ItemBatchOperation
        let slot: Slot
    }

    /// What a waiting caller is told.
    private enum Signal: Sendable {
        /// Its operation's answer.
        case answer(Result<ItemResponse, any Error>)
        /// It sends the next batch.
        case send
    }

    /// Where a caller's signal waits for it, whether it comes before or after the caller starts waiting; each signal
    /// is taken once.
    private final class Slot: Sendable {
        private enum Mode {
            case empty
            case waiting(CheckedContinuation<Signal, Never>)
            case told(Signal)
        }

        private let mode = Mutex(Mode.empty)

        func tell(_ signal: Signal) {
            let waiting: CheckedContinuation<Signal, Never>? = mode.withLock { mode in
                if case .waiting(let continuation) = mode {
                    mode = .empty
                    return continuation
                }
                mode = .told(signal)
                return nil
            }
            waiting?.resume(returning: signal)
        }

        func wait() async -> Signal {
            await withCheckedContinuation { continuation in
                let told: Signal? = mode.withLock { mode in
                    if case .told(let signal) = mode {
                        mode = .empty
                        return signal
                    }
                    mode = .waiting(continuation)
                    return nil
                }
                if let told { continuation.resume(returning: told) }
            }
        }
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
    func commit(_ version: VersionPayload) async throws -> ItemResponse {
        try await submit(.commit(version))
    }

    private func submit(_ operation: ItemBatchOperation) async throws -> ItemResponse {
        let slot = Slot()
        // Queued, and the sender when no one is sending: checked and queued under one lock, so no operation is ever
        // queued with no one to send it.
        let sends = state.withLock { state in
            state.queue.append(Waiting(operation: operation, slot: slot))
            defer { state.isSending = true }
            return !state.isSending
        }
        var signal = sends ? Signal.send : await slot.wait()
        while true {
            switch signal {
            case .answer(let result):
                return try result.get()
            case .send:
                // One batch, then the role passes to the oldest waiter: a sender does not keep sending for others
                // (holding its item's lane) while new operations keep coming.
                await sendBatch()
                let next: Slot? = state.withLock { state in
                    guard let first = state.queue.first else {
                        state.isSending = false
                        return nil
                    }
                    return first.slot
                }
                next?.tell(.send)
                signal = await slot.wait()
            }
        }
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
    private func sendFittingBatch(_ operations: [ItemBatchOperation]) async throws -> ItemBatchResponse {
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

    /// Sends the operations at the head of the queue as one batch and tells each caller its answer.
    private func sendBatch() async {
        let batch: [Waiting] = state.withLock { state in
            // At most 1,000 operations, and about as many bytes as a request may hold: a commit of a large file
            // carries its whole manifest.
            var count = 0
            var bytes = 0
            for waiting in state.queue.prefix(ItemBatchRequest.maximumOperations) {
                bytes += Self.estimatedSize(of: waiting.operation)
                guard count == 0 || bytes <= Self.batchBytes else { break }
                count += 1
            }
            let batch = Array(state.queue.prefix(count))
            state.queue.removeFirst(batch.count)
            return batch
        }
        guard !batch.isEmpty else { return }
        do {
            let response = try await sendFittingBatch(batch.map(\.operation))
            guard response.results.count == batch.count else {
                throw ProtocolError(
                    .internalError,
                    "the service answered \(response.results.count) results for a batch of \(batch.count)")
            }
            for (waiting, result) in zip(batch, response.results) {
                switch result {
                case .applied(let answer): waiting.slot.tell(.answer(.success(answer)))
                case .refused(let error): waiting.slot.tell(.answer(.failure(error)))
                }
            }
        } catch {
            for waiting in batch { waiting.slot.tell(.answer(.failure(error))) }
        }
    }
}
