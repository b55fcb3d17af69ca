import Foundation

/// A lock around a value whose waiters sleep in the kernel at once: an `NSLock`, a `pthread_mutex_t` of the default
/// kind. The standard library's `Mutex` spins before it sleeps, which pays off only while the holder is running; on a
/// machine with more busy threads than cores a holder is often not, and the coordination locks every file access in
/// a process takes spun for a tenth of two engines' CPU while thousands of files arrived at once.
final class SleepingLock<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    init(_ state: State) { self.state = state }

    /// Runs `body` with the value, holding the lock.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
