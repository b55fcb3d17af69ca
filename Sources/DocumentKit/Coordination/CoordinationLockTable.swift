import Foundation

/// The in-process half of coordination locking: who holds which key, per thread, and waiting with a deadline.
///
/// A thread that holds a key exclusively may take it again in any mode; a thread that holds it shared may take it
/// shared again, and asking for it exclusively fails at once (it would wait for itself). Waiting writers keep new
/// readers out, so a stream of readers cannot starve a writer.
final class CoordinationLockTable: @unchecked Sendable {
    // @unchecked Sendable: `entries` is only read and written while `condition` is locked.

    /// The table every coordinator of this process uses.
    static let shared = CoordinationLockTable()

    /// How an acquisition was granted: a fresh one also needs the cross-process file lock; a re-entry does not.
    enum Grant: Sendable { case fresh, reentry }

    private struct Entry {
        var exclusiveHolder: Int32?
        var exclusiveDepth = 0
        var sharedHolders: [Int32: Int] = [:]
        var waitingWriters = 0
        var isIdle: Bool { exclusiveHolder == nil && sharedHolders.isEmpty && waitingWriters == 0 }
    }

    private let condition = NSCondition()
    private var entries: [String: Entry] = [:]

    /// Takes `key` in `mode` for thread `thread`, waiting until `deadline`.
    func acquire(
        _ lock: CoordinationLockPlan.Lock,
        thread: Int32,
        deadline: Date,
        cancellation: CoordinationCancellation
    ) throws(FileCoordinationError) -> Grant {
        condition.lock()
        defer { condition.unlock() }
        var entry = entries[lock.key, default: Entry()]
        if entry.exclusiveHolder == thread {
            entry.exclusiveDepth += 1
            entries[lock.key] = entry
            return .reentry
        }
        if let depth = entry.sharedHolders[thread] {
            guard lock.mode == .shared else {
                throw FileCoordinationError(
                    .wouldDeadlock,
                    "Writing \(lock.item) needs exclusive access to \(lock.key), which this thread already holds "
                        + "for reading: the write would wait for itself"
                )
            }
            entry.sharedHolders[thread] = depth + 1
            entries[lock.key] = entry
            return .reentry
        }
        if lock.mode == .exclusive {
            entries[lock.key, default: Entry()].waitingWriters += 1
        }
        defer {
            if lock.mode == .exclusive { entries[lock.key]?.waitingWriters -= 1 }
            if entries[lock.key]?.isIdle == true { entries[lock.key] = nil }
        }
        while true {
            if cancellation.isCancelled {
                throw FileCoordinationError(.cancelled, "Coordinated access to \(lock.item) was cancelled")
            }
            let current = entries[lock.key, default: Entry()]
            let free: Bool
            switch lock.mode {
            case .shared: free = current.exclusiveHolder == nil && current.waitingWriters == 0
            case .exclusive: free = current.exclusiveHolder == nil && current.sharedHolders.isEmpty
            }
            if free {
                switch lock.mode {
                case .shared: entries[lock.key, default: Entry()].sharedHolders[thread] = 1
                case .exclusive:
                    entries[lock.key, default: Entry()].exclusiveHolder = thread
                    entries[lock.key, default: Entry()].exclusiveDepth = 1
                }
                return .fresh
            }
            if !condition.wait(until: deadline) && Date() >= deadline {
                let holder =
                    current.exclusiveHolder.map { "a writer on thread \($0)" }
                    ?? "readers on threads \(current.sharedHolders.keys.sorted())"
                throw FileCoordinationError(
                    .timedOut,
                    "Timed out waiting for \(lock.mode == .shared ? "read" : "write") access to \(lock.key) "
                        + "(for \(lock.item)), held in this process by \(holder)"
                )
            }
        }
    }

    /// Releases one acquisition of `key` by `thread`.
    func release(key: String, thread: Int32) {
        condition.lock()
        defer { condition.unlock() }
        guard var entry = entries[key] else { return }
        if entry.exclusiveHolder == thread {
            entry.exclusiveDepth -= 1
            if entry.exclusiveDepth == 0 { entry.exclusiveHolder = nil }
        } else if let depth = entry.sharedHolders[thread] {
            entry.sharedHolders[thread] = depth > 1 ? depth - 1 : nil
        }
        entries[key] = entry.isIdle ? nil : entry
        condition.broadcast()
    }

    /// Moves one acquisition of `key` from thread `old` to thread `new` (an asynchronous coordination waits on one
    /// thread and runs its accessor on another).
    func transfer(key: String, from old: Int32, to new: Int32) {
        guard old != new else { return }
        condition.lock()
        defer { condition.unlock() }
        guard var entry = entries[key] else { return }
        if entry.exclusiveHolder == old {
            // One exclusive acquisition moves whole; the table holds at most one per key.
            entry.exclusiveHolder = new
        } else if let depth = entry.sharedHolders[old] {
            entry.sharedHolders[old] = depth > 1 ? depth - 1 : nil
            entry.sharedHolders[new, default: 0] += 1
        }
        entries[key] = entry
    }

    /// Wakes every waiter so that it looks at its cancellation.
    func wakeAll() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }
}
