import GRDB
import SQLiteSupport
import Synchronization

/// Runs the write operations of concurrent callers together, several to a transaction ("group commit").
///
/// SQLite has one writer; when many devices commit at once, each waiting for its own transaction spends most of
/// the time on transaction overhead. Here, while one transaction runs, new operations queue; the next transaction
/// takes all of them, each inside its own savepoint — so an operation that fails (a refused commit) is rolled back
/// alone and the others still land. Every caller is answered only after the transaction holding its operation has
/// committed, so an answer still means "stored".
final class GroupCommitter: Sendable {
    private struct Pending: Sendable {
        let work: @Sendable (Database) throws -> any Sendable
        let continuation: CheckedContinuation<any Sendable, any Error>
    }

    private struct State {
        var queue: [Pending] = []
        var isRunning = false
    }

    private let writer: any DatabaseWriter
    private let state = Mutex(State())
    private let maximumBatch: Int

    init(writer: any DatabaseWriter, maximumBatch: Int = 64) {
        self.writer = writer
        self.maximumBatch = maximumBatch
    }

    /// Runs `work` in a write transaction (shared with other callers' work) and returns its result once committed.
    /// If `work` throws, its changes are rolled back and the error is thrown here; others are unaffected.
    func write<Value: Sendable>(_ work: @escaping @Sendable (Database) throws -> Value) async throws -> Value {
        let value = try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { state in
                state.queue.append(Pending(work: { try work($0) }, continuation: continuation))
                defer { state.isRunning = true }
                return !state.isRunning
            }
            if start { writer.asyncWriteWithoutTransaction { db in self.drain(db) } }
        }
        return value as! Value  // the value `work` returned, of type `Value`
    }

    /// Runs batches until the queue is empty.
    private func drain(_ db: Database) {
        while true {
            let batch: [Pending] = state.withLock { state in
                let batch = Array(state.queue.prefix(maximumBatch))
                state.queue.removeFirst(batch.count)
                if batch.isEmpty { state.isRunning = false }
                return batch
            }
            if batch.isEmpty { return }
            var results: [Result<any Sendable, any Error>] = []
            do {
                try db.inTransaction(.immediate) {
                    for pending in batch {
                        results.append(Result { try db.inPreparedSavepoint { try pending.work(db) } })
                    }
                    return .commit
                }
            } catch {
                results = batch.map { _ in .failure(error) }
            }
            for (pending, result) in zip(batch, results) { pending.continuation.resume(with: result) }
        }
    }
}
