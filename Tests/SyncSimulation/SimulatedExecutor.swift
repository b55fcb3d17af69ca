import Foundation

/// Where a simulated engine's tasks run: nowhere until the history runs them, one job at a time on its own thread,
/// in an order its seed chooses. Every wait of the engine (for the service, for another item's lane, for the actor)
/// is a point the history may run something else at.
final class SimulatedExecutor: TaskExecutor, @unchecked Sendable {
    private let lock = NSLock()
    private var jobs: [UnownedJob] = []

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        lock.lock()
        jobs.append(job)
        lock.unlock()
    }

    /// How many jobs wait to run.
    var waiting: Int {
        lock.lock()
        defer { lock.unlock() }
        return jobs.count
    }

    /// Runs the job at `index` among those waiting (see ``waiting``).
    func run(_ index: Int) {
        lock.lock()
        let job = jobs.remove(at: index)
        lock.unlock()
        job.runSynchronously(on: asUnownedTaskExecutor())
    }
}
