import Foundation
import SyncEngine
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs each test (each case of a parameterized one) on a thread of its own instead of on the threads Swift
/// concurrency's tasks share.
///
/// On Linux those shared threads are as many as the cores, and Swift Testing runs every test at once on them; a test
/// that computes for seconds (a simulation, megabytes chunked in a debug build) or blocks (waiting on a lock another
/// thread holds) keeps one of them for as long. With two cores, two such tests stall every other test's awaits, and
/// the name lookups NIO makes on Dispatch's global queue behind them, past their connect timeouts.
///
/// The test runs with a task executor preference for the thread, so it is still the test's task: `#expect` and task
/// locals work as anywhere, and its child tasks and default actors run there too.
///
/// ```swift
/// @Suite("Seeded histories", .ownThread(.background)) struct HistoryTests { … }
/// ```
public struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
    /// What the tests do on their threads, which decides how many run at once and how they are scheduled.
    public enum Work: Sendable {
        /// Mostly waits (on locks, other threads, child processes): any number at once, scheduled as every other
        /// thread.
        case waiting
        /// Computes, with the disk or SQLite (whose allocator takes a lock every thread shares, so a thread that holds
        /// it must not be the scheduler's last choice): as many at once as there are cores, at normal priority.
        case computing
        /// Computes in memory alone: as many at once as there are cores, at nice 19, so the other tests' work comes
        /// first.
        case background
    }

    let work: Work

    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite, or a parameterized test as a whole: its cases get threads of their own.
        guard testCase != nil else { return try await function() }
        let niced = work == .background
        func run() async throws {
            let executor = ThreadTaskExecutor(name: test.name, niced: niced)
            defer { executor.stop() }
            try await withTaskExecutorPreference(executor) { try await function() }
        }
        if work == .waiting { return try await run() }
        try await Self.computeSlots.withSlot { try await run() }
    }

    /// The computing tests under way, at most one per core: more would only share the cores, each holding its memory
    /// and (for the parameterized ones) a database of its own for longer.
    static let computeSlots = TransferSlots(ProcessInfo.processInfo.activeProcessorCount)
}

extension Trait where Self == OwnThreadTrait {
    /// Each test runs on a thread of its own (see ``OwnThreadTrait``); `work` says what it does there.
    public static func ownThread(_ work: OwnThreadTrait.Work = .waiting) -> Self {
        OwnThreadTrait(work: work)
    }
}

/// A task executor that runs its jobs, one at a time, on one thread it starts; ``stop()`` lets the thread end once it
/// has nothing left to run (a job enqueued after that starts another).
public final class ThreadTaskExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var stopped = false
    private var threadRunning = false
    private let name: String
    private let niced: Bool

    /// Starts the executor's thread, named `name`; `niced` lowers it to nice 19.
    public init(name: String, niced: Bool = false) {
        self.name = name
        self.niced = niced
        condition.lock()
        startThread()
        condition.unlock()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        if !threadRunning { startThread() }
        condition.signal()
        condition.unlock()
    }

    /// Lets the thread end once its queue is empty.
    public func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    /// Call holding `condition`.
    private func startThread() {
        threadRunning = true
        let thread = Thread { [self] in run() }
        thread.name = String(name.prefix(15))
        thread.stackSize = 8 << 20
        thread.start()
    }

    private func run() {
        #if os(Linux)
            // On Linux the nice value belongs to each thread, and 0 names the calling one.
            if niced { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19) }
        #endif
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty {
                threadRunning = false
                condition.unlock()
                return
            }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job.runSynchronously(on: executor) }
        }
    }
}
