import Foundation
import PostgresNIO
import Synchronization
import UbiquityProtocol

/// Runs the item operations of concurrent callers on one container together, several to a transaction ("group
/// commit"), as ``GroupCommitter`` does for SQLite.
///
/// Every write to a container holds its row lock, so writes to one container run one after another whatever the
/// node; a transaction per operation would hold the lock for a dozen round trips each, and the container's writers
/// would spend their time waiting on it. Here, while a transaction runs on a container, this node's new operations on
/// it queue; the next transaction takes them all, reads what they need in a few statements, runs them in memory
/// (``PostgresItemWork``) and writes the result in a few more. An operation that is refused (or fails on a row it
/// cannot read) is undone alone and the others still land. Every caller is answered only after the transaction holding its operation has
/// committed, so an answer still means "stored". Other containers' operations run in transactions of their own, at
/// the same time.
final class PostgresItemCommitter: Sendable {
    /// An operation waiting for its turn.
    private struct Pending: Sendable {
        let keys: ItemWorkKeys
        let work: @Sendable (PostgresItemWork) async throws -> any Sendable
        let continuation: CheckedContinuation<any Sendable, any Error>
    }

    private struct Queue {
        var pending: [Pending] = []
        var isRunning = false
    }

    private let queues = Mutex<[ContainerKey: Queue]>([:])
    private let maximumBatch: Int

    init(maximumBatch: Int = 64) {
        self.maximumBatch = maximumBatch
    }

    /// Runs `work` on `container` in a transaction (shared with other callers' work) and returns its result once
    /// committed. If `work` throws a ``ProtocolError``, what it did is undone and the error is thrown here; the
    /// others are unaffected. `keys` names what it will read, so that the transaction reads it with the others'.
    func run<Value: Sendable>(
        on container: ContainerKey, of store: PostgresMetadataStore, keys: ItemWorkKeys,
        _ work: @escaping @Sendable (PostgresItemWork) async throws -> Value
    ) async throws -> Value {
        let value = try await withCheckedThrowingContinuation { continuation in
            let start = queues.withLock { queues in
                queues[container, default: Queue()].pending.append(
                    Pending(keys: keys, work: { try await work($0) }, continuation: continuation))
                defer { queues[container]!.isRunning = true }
                return !queues[container]!.isRunning
            }
            // The transaction holds the container's lock while its task waits to be run again after each answer, so
            // it goes ahead of the requests waiting to join the next one.
            if start { Task(priority: .high) { await self.drain(container, of: store) } }
        }
        return value as! Value  // the value `work` returned, of type `Value`
    }

    /// Runs transactions on `container` until its queue is empty.
    private func drain(_ container: ContainerKey, of store: PostgresMetadataStore) async {
        while true {
            let batch: [Pending] = queues.withLock { queues in
                let batch = Array(queues[container]!.pending.prefix(maximumBatch))
                queues[container]!.pending.removeFirst(batch.count)
                if batch.isEmpty { queues[container] = nil }
                return batch
            }
            if batch.isEmpty { return }
            await run(batch, on: container, of: store)
        }
    }

    /// Runs `batch` in one transaction and answers its callers. When the transaction fails on a unique key that one
    /// operation's own transaction would have met in another order (a path one item leaves and another takes), each
    /// operation runs again in a transaction of its own.
    private func run(_ batch: [Pending], on container: ContainerKey, of store: PostgresMetadataStore) async {
        let results: [Result<any Sendable, any Error>]
        do {
            results = try await store.write(retryingUniqueViolations: batch.count == 1) { db in
                let work = try await PostgresItemWork(
                    locking: container, lockingAccount: batch.contains { !$0.keys.chunks.isEmpty },
                    prefetching: batch.map(\.keys), in: db)
                var results: [Result<any Sendable, any Error>] = []
                for pending in batch {
                    let before = work.contents
                    do {
                        results.append(.success(try await pending.work(work)))
                    } catch  where !(error is PSQLError) {
                        // Refused, or a row it needed could not be read: undone alone. (The database's own errors
                        // abort the transaction, and fail or retry the batch.)
                        work.contents = before
                        results.append(.failure(error))
                    }
                }
                try await work.flush()
                return results
            }
        } catch let error as PostgresStoreError where batch.count > 1 && error.sqlState == "23505" {
            for pending in batch { await run([pending], on: container, of: store) }
            return
        } catch {
            results = batch.map { _ in .failure(error) }
        }
        for (pending, result) in zip(batch, results) { pending.continuation.resume(with: result) }
    }
}
