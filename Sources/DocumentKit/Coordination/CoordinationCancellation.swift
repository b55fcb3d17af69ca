import Synchronization

/// The cancellation flag of one coordination in progress; ``FileCoordinator/cancel()`` sets it and wakes whatever the
/// coordination is waiting on.
final class CoordinationCancellation: Sendable {
    private struct State {
        var isCancelled = false
        var wakers: [@Sendable () -> Void] = []
    }
    private let state = Mutex(State())

    var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// Sets the flag and runs every registered waker.
    func cancel() {
        let wakers = state.withLock { state -> [@Sendable () -> Void] in
            state.isCancelled = true
            return state.wakers
        }
        for wake in wakers { wake() }
        CoordinationLockTable.shared.wakeAll()
    }

    /// Runs `wake` when the flag is set (at once if it is already set).
    func onCancel(_ wake: @escaping @Sendable () -> Void) {
        let cancelled = state.withLock { state -> Bool in
            if !state.isCancelled { state.wakers.append(wake) }
            return state.isCancelled
        }
        if cancelled { wake() }
    }
}
