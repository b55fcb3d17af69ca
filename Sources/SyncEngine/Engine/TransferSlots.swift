import Synchronization

/// A count of places that tasks wait for without holding a thread: the engine's large uploads that may read their
/// chunks into memory at once, whatever the number of operations under way, the bytes its small uploads hold (a slot
/// a few kilobytes), and the tests' computing suites, one a core.
///
/// A holder may take several slots at once; waiters are served first come, first served, so a holder asking for
/// many is not passed over for ever by holders asking for few. One asking for more than there are takes them all.
///
/// ```swift
/// let slots = TransferSlots(2)
/// try await slots.withSlot { try await upload() }
/// ```
public final class TransferSlots: Sendable {
    private struct State {
        var free: Int
        var waiting: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>
    /// How many slots there are.
    public let capacity: Int

    /// Slots for `count` holders at once (at least one).
    public init(_ count: Int) {
        capacity = max(1, count)
        state = Mutex(State(free: capacity))
    }

    /// How many holders wait for slots.
    public var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Runs `body` holding a slot, waiting for one first if all are taken; slots go to waiters in turn.
    public func withSlot<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async rethrows
        -> T
    {
        try await withSlots(1, body)
    }

    /// Runs `body` holding `count` slots (at least one, at most ``capacity``), waiting first until they are free and
    /// every holder that came before has been served.
    public func withSlots<T>(
        _ count: Int, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        let taken = min(max(1, count), capacity)
        await take(taken)
        defer { give(taken) }
        return try await body()
    }

    private func take(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state in
                guard state.waiting.isEmpty, state.free >= count else {
                    state.waiting.append((count, continuation))
                    return false
                }
                state.free -= count
                return true
            }
            if granted { continuation.resume() }
        }
    }

    private func give(_ count: Int) {
        let served = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.free += count
            var served: [CheckedContinuation<Void, Never>] = []
            while let first = state.waiting.first, first.count <= state.free {
                state.free -= first.count
                served.append(first.continuation)
                state.waiting.removeFirst()
            }
            return served
        }
        for continuation in served { continuation.resume() }
    }
}
