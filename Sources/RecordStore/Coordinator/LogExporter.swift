import Foundation
import Synchronization

/// Writes a store's logs into its folder of the container on a thread of its own, so that a save returns once its
/// transaction is durable rather than after a file is made for its log — as Core Data's ubiquitous stores hand
/// their transaction logs on after the save. Nothing waits on the file system in a save, and nothing is lost to it:
/// the save's transaction keeps its log in the outbox until the log is durable in the container, so a crash before
/// the thread gets to it leaves the log to the next open, which writes it.
///
/// The logs are flushed to the disk together, in one flush of the file system, at most `flushDelay` after the first
/// of them was written (or once ``RecordDatabase/logsFlushedTogether`` are waiting): until then the outbox keeps
/// them. Like a journal's commit interval, this bounds how much the outbox holds without a flush for each save.
///
/// Logs are written in the order of their saves. ``waitUntilWritten()`` waits for the logs of every save made
/// before it; a store being removed waits so, then flushes them, and a process that exits (`exit`, or returning
/// from `main`) waits so for every store's, so that a command that saves and exits leaves its logs in the container.
final class LogExporter: @unchecked Sendable {
    // @unchecked Sendable: everything below `condition` is only read and written while it is locked.

    /// What the thread does with a batch: the store whose saves asked, the logs they kept (their bytes, when they
    /// fit in ``queuedLimit``), and whether some were left out and must be read back from the outbox.
    typealias Work = @Sendable (_ store: PersistentStore, _ logs: [RecordDatabase.KeptLog], _ incomplete: Bool) -> Void

    /// At most this many saves' logs wait in memory for the thread; the bytes of later ones are read back from the
    /// outbox, so a burst of saves holds a bounded amount of memory.
    static let queuedLimit = 64

    private let work: Work
    /// How long after the first log written since a flush the logs are flushed; `nil` flushes them only by their
    /// count, and zero before the saves that asked hear that their logs are written.
    private let flushDelay: Duration?
    private let flush: @Sendable (_ store: PersistentStore) -> Void
    /// The store of the logs written and not flushed yet, not kept alive for them: its database flushes them as it
    /// is removed, or its outbox writes them again on the next open.
    private weak var unflushedStore: PersistentStore?
    /// When the logs written since the last flush are due to be flushed.
    private var flushDeadline: Date?
    private let condition = NSCondition()
    private var queued: [RecordDatabase.KeptLog] = []
    private var incomplete = false
    /// The store that asked, held only until the thread takes the batch: an idle thread keeps no store alive.
    private var owner: PersistentStore?
    /// Requests made, and requests whose logs the thread has written (or found nothing to write for).
    private var requested: UInt64 = 0
    private var completed: UInt64 = 0
    private var started = false
    private var stopped = false

    /// The exporters with logs still to write, which a process waits for as it exits.
    private static let outstanding = Mutex<[ObjectIdentifier: LogExporter]>([:])
    private static let waitsAtExit: Void = {
        atexit { LogExporter.waitForAll() }
    }()

    init(
        flushDelay: Duration?, work: @escaping Work, flush: @escaping @Sendable (_ store: PersistentStore) -> Void
    ) {
        self.flushDelay = flushDelay
        self.work = work
        self.flush = flush
    }

    /// Waits until every exporter of the process has written what was asked of it so far.
    static func waitForAll() {
        for exporter in outstanding.withLock({ Array($0.values) }) { exporter.waitUntilWritten() }
    }

    /// Asks for the logs of `store`'s saves to be written, `log` (the save's own, if it kept one) among them.
    func request(_ log: RecordDatabase.KeptLog?, from store: PersistentStore) {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped else { return }
        if let log {
            if queued.count < Self.queuedLimit { queued.append(log) } else { incomplete = true }
        } else {
            incomplete = true
        }
        owner = store
        if completed == requested { Self.outstanding.withLock { $0[ObjectIdentifier(self)] = self } }
        requested += 1
        if !started {
            Self.waitsAtExit
            started = true
            let thread = Thread { [self] in run() }
            thread.name = "RecordStore log export"
            thread.start()
        }
        condition.signal()
    }

    /// Waits until the logs of every save requested before this call are written (or found to have nowhere to go).
    /// Returns at once when the exporter was stopped and its thread has finished.
    func waitUntilWritten() {
        condition.lock()
        defer { condition.unlock() }
        let target = requested
        while completed < target { condition.wait() }
    }

    /// Stops the thread once it has written what was asked before; later requests are left to the outbox.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    private func run() {
        condition.lock()
        while true {
            if let deadline = flushDeadline, completed == requested || Date() >= deadline {
                // Waits for the deadline unless saves ask for more first, then flushes.
                while completed == requested && !stopped && condition.wait(until: deadline) {}
                if Date() >= deadline || stopped {
                    flushDeadline = nil
                    var store = unflushedStore
                    condition.unlock()
                    if let store { flush(store) }
                    store = nil
                    condition.lock()
                }
                continue
            }
            if completed == requested {
                if stopped { break }
                condition.wait()
                continue
            }
            let target = requested
            let logs = queued
            var store = owner
            let left = incomplete
            queued = []
            owner = nil
            incomplete = false
            condition.unlock()
            if let store {
                work(store, logs, left)
                if flushDelay == .zero { flush(store) }
            }
            condition.lock()
            if let flushDelay, flushDelay != .zero, flushDeadline == nil, store != nil {
                unflushedStore = store
                flushDeadline = Date().addingTimeInterval(flushDelay / .seconds(1))
            }
            // Let go of the store unlocked: were it the last reference, its deinit stops this exporter.
            condition.unlock()
            store = nil
            condition.lock()
            completed = target
            if completed == requested { Self.outstanding.withLock { $0[ObjectIdentifier(self)] = nil } }
            condition.broadcast()
        }
        condition.unlock()
    }
}
