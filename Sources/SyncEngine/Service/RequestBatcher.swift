import Synchronization
import UbiquityProtocol

/// Sends the operations that concurrent callers ask for at the same time as one request: the engine's lanes each
/// ask for their own item's creation, commit or chunk, and the service answers them together.
///
/// The first caller finding fewer than ``concurrency`` batches on their way sends its own operation at once, with
/// whatever else is queued (up to ``maximumCount`` a batch and about ``maximumBytes``); when a batch is answered, the
/// oldest waiting caller not already chosen sends the next. A lone request waits for nothing. Each caller gets its
/// own operation's answer, or its own refusal thrown as the single request would have thrown it; a failure of the
/// request itself (the service unreachable) is thrown to every caller of that batch. No task of its own: the batches
/// go from callers' tasks, on the engine's executor.
final class RequestBatcher<Operation: Sendable, Answer: Sendable>: Sendable {
    /// One caller's place in the queue: its operation, how it hears of its answer or that it sends next, and whether
    /// it was chosen to send (its operation may still go in another's batch).
    private struct Waiting: Sendable {
        let operation: Operation
        let slot: Slot
        var isSender: Bool
    }

    /// What a waiting caller is told.
    private enum Signal: Sendable {
        /// Its operation's answer.
        case answer(Result<Answer, any Error>)
        /// It sends the next batch.
        case send
    }

    /// Where a caller's signals wait for it, in the order told, whether they come before or after the caller starts
    /// waiting (a caller chosen to send may be answered by another's batch before it has sent its own).
    private final class Slot: Sendable {
        private struct Mode {
            var told: [Signal] = []
            var waiting: CheckedContinuation<Signal, Never>?
        }

        private let mode = Mutex(Mode())

        func tell(_ signal: Signal) {
            let waiting: CheckedContinuation<Signal, Never>? = mode.withLock { mode in
                guard let continuation = mode.waiting else {
                    mode.told.append(signal)
                    return nil
                }
                mode.waiting = nil
                return continuation
            }
            waiting?.resume(returning: signal)
        }

        func wait() async -> Signal {
            await withCheckedContinuation { continuation in
                let told: Signal? = mode.withLock { mode in
                    guard mode.told.isEmpty else { return mode.told.removeFirst() }
                    mode.waiting = continuation
                    return nil
                }
                if let told { continuation.resume(returning: told) }
            }
        }
    }

    private struct State {
        var queue: [Waiting] = []
        /// Callers chosen to send that have not finished their batch.
        var senders = 0
    }

    /// Sends one batch and returns each operation's result, in order.
    typealias Send = @Sendable ([Operation]) async throws -> [Result<Answer, any Error>]

    /// The most operations one batch holds.
    let maximumCount: Int
    /// About the most bytes one batch carries (a lone operation goes whatever its size).
    let maximumBytes: Int
    /// The most batches on their way at once.
    let concurrency: Int
    private let size: @Sendable (Operation) -> Int
    private let send: Send
    private let state = Mutex(State())

    /// A batcher sending with `send` batches of at most `maximumCount` operations and about `maximumBytes` (each
    /// operation's bytes as `size` estimates them), at most `concurrency` at once.
    init(
        maximumCount: Int, maximumBytes: Int, concurrency: Int = 1, size: @escaping @Sendable (Operation) -> Int,
        send: @escaping Send
    ) {
        self.maximumCount = maximumCount
        self.maximumBytes = maximumBytes
        self.concurrency = max(1, concurrency)
        self.size = size
        self.send = send
    }

    /// How many operations wait for the batch after the one on its way.
    var queuedCount: Int { state.withLock { $0.queue.count } }

    /// Sends `operation`, in a batch with the others asked for meanwhile, and returns its answer.
    func submit(_ operation: Operation) async throws -> Answer {
        let slot = Slot()
        // Queued, and a sender when fewer than `concurrency` are sending: checked and queued under one lock, so no
        // operation is ever queued with no one to send it.
        let sends = state.withLock { state in
            let sends = state.senders < concurrency
            if sends { state.senders += 1 }
            state.queue.append(Waiting(operation: operation, slot: slot, isSender: sends))
            return sends
        }
        var signal = sends ? Signal.send : await slot.wait()
        while true {
            switch signal {
            case .answer(let result):
                return try result.get()
            case .send:
                // One batch, then the role passes to the oldest waiter not yet chosen: a sender does not keep sending
                // for others (holding its item's lane) while new operations keep coming.
                await sendBatch()
                let next: Slot? = state.withLock { state in
                    guard let index = state.queue.firstIndex(where: { !$0.isSender }) else {
                        state.senders -= 1
                        return nil
                    }
                    state.queue[index].isSender = true
                    return state.queue[index].slot
                }
                next?.tell(.send)
                signal = await slot.wait()
            }
        }
    }

    /// Sends the operations at the head of the queue as one batch and tells each caller its answer.
    private func sendBatch() async {
        let batch: [Waiting] = state.withLock { state in
            var count = 0
            var bytes = 0
            for waiting in state.queue.prefix(maximumCount) {
                bytes += size(waiting.operation)
                guard count == 0 || bytes <= maximumBytes else { break }
                count += 1
            }
            let batch = Array(state.queue.prefix(count))
            state.queue.removeFirst(batch.count)
            return batch
        }
        guard !batch.isEmpty else { return }
        do {
            let results = try await send(batch.map(\.operation))
            guard results.count == batch.count else {
                throw ProtocolError(
                    .internalError, "the service answered \(results.count) results for a batch of \(batch.count)")
            }
            for (waiting, result) in zip(batch, results) { waiting.slot.tell(.answer(result)) }
        } catch {
            for waiting in batch { waiting.slot.tell(.answer(.failure(error))) }
        }
    }
}
