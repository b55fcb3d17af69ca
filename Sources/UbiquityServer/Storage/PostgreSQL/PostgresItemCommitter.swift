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
        /// Whether a transaction has taken its operations and not yet decided what they write. Operations arriving
        /// meanwhile wait for the next transaction, which starts once this one has decided.
        var deciding = false
        /// Transactions under way: the one deciding, and the one before it writing and committing.
        var running = 0

        /// Whether a transaction should start now; if so, it is counted as started.
        mutating func startsNext() -> Bool {
            guard !deciding, !pending.isEmpty else { return false }
            deciding = true
            running += 1
            return true
        }
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
                return queues[container]!.startsNext()
            }
            if start { startTransaction(on: container, of: store) }
        }
        return value as! Value  // the value `work` returned, of type `Value`
    }

    /// Starts a transaction on `container` with the operations queued on it.
    ///
    /// The next transaction starts as soon as this one has decided what it writes, while it still writes and
    /// commits: its `BEGIN`, lock and lookup are sent at once and wait in the database for this one's lock, so it
    /// reads the moment this one commits instead of a round trip or more later. It cannot pass this one (the lock is
    /// held before it asks), so transactions on a container still commit one after another, in the order they
    /// took their operations. The task runs at high priority: the transaction holds the container's lock while it
    /// waits to be run again after each answer, and goes ahead of requests waiting to join the next one.
    private func startTransaction(on container: ContainerKey, of store: PostgresMetadataStore) {
        Task(priority: .high) {
            let batch = queues.withLock { queues in
                let batch = Array(queues[container]!.pending.prefix(maximumBatch))
                queues[container]!.pending.removeFirst(batch.count)
                return batch
            }
            let decided = Once { [self] in
                let start = queues.withLock { queues in
                    queues[container]!.deciding = false
                    return queues[container]!.startsNext()
                }
                if start { startTransaction(on: container, of: store) }
            }
            await run(batch, on: container, of: store, decided: decided.run)
            decided.run()
            queues.withLock { queues in
                queues[container]!.running -= 1
                if queues[container]!.running == 0, !queues[container]!.deciding { queues[container] = nil }
            }
        }
    }

    /// Runs `batch` in one transaction and answers its callers. When the transaction fails on a unique key that one
    /// operation's own transaction would have met in another order (a path one item leaves and another takes), each
    /// operation runs again in a transaction of its own.
    /// `decided` is called once the operations' writes are decided, before they are sent.
    private func run(
        _ batch: [Pending], on container: ContainerKey, of store: PostgresMetadataStore,
        decided: @escaping @Sendable () -> Void
    ) async {
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
                decided()
                try await work.flush()
                return results
            }
        } catch let error as PostgresStoreError where batch.count > 1 && error.sqlState == "23505" {
            for pending in batch { await run([pending], on: container, of: store, decided: {}) }
            return
        } catch {
            results = batch.map { _ in .failure(error) }
        }
        for (pending, result) in zip(batch, results) { pending.continuation.resume(with: result) }
    }
}

/// An action run the first time it is asked for, and never again.
private final class Once: Sendable {
    private let action: Mutex<(@Sendable () -> Void)?>

    init(_ action: @escaping @Sendable () -> Void) {
        self.action = Mutex(action)
    }

    func run() {
        action.withLock { action in
            defer { action = nil }
            return action
        }?()
    }
}
