import Synchronization

/// A count of places that tasks wait for without holding a thread: the engine's large uploads that may read their
/// chunks into memory at once, whatever the number of operations under way (and the tests' computing suites, one a
/// core).
///
/// ```swift
/// let slots = TransferSlots(2)
/// try await slots.withSlot { try await upload() }
/// ```
public final class TransferSlots: Sendable {
    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    /// Slots for `count` holders at once (at least one).
    public init(_ count: Int) { state = Mutex(State(free: max(1, count))) }

    /// Runs `body` holding a slot, waiting for one first if all are taken; slots go to waiters in turn.
    public func withSlot<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async rethrows
        -> T
    {
        await take()
        defer { give() }
        return try await body()
    }

    private func take() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state in
                guard state.free > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    private func give() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
