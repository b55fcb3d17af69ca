import Foundation
import Synchronization

/// A clock that moves only when a test moves it: code that waits on an injected clock (polling, backoff) waits on
/// this one, and the test sees who waits (``waitForSleepers(_:)``) and lets them go (``advance(by:)``) — no
/// wall-clock time involved.
public final class ManualClock: Clock, Sendable {
    /// An instant: the time since the clock was made.
    public struct Instant: InstantProtocol {
        public var offset: Duration

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [UUID: Sleeper] = [:]
        var cancelled: Set<UUID> = []
        var watchers: [UUID: (count: Int, continuation: CheckedContinuation<Bool, Never>)] = [:]
        /// Watchers whose deadline passed before they were registered.
        var expired: Set<UUID> = []
    }

    private let state = Mutex(State())

    /// A clock at offset zero.
    public init() {}

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .zero }

    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resume, watchers) = state.withLock { state -> (Bool?, [CheckedContinuation<Bool, Never>]) in
                    if state.cancelled.remove(id) != nil { return (false, []) }
                    if deadline <= state.now { return (true, []) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return (nil, Self.due(&state))
                }
                for watcher in watchers { watcher.resume(returning: true) }
                switch resume {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: CancellationError())
                case nil: break
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock on by `duration`, waking everyone whose deadline has come.
    public func advance(by duration: Duration) {
        let woken = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in woken { sleeper.continuation.resume() }
    }

    /// How many wait on the clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Waits until at least `count` wait on the clock, or (in real time) `timeout` passes.
    /// - Returns: Whether they did: `false` when what should have slept on the clock never did.
    @discardableResult
    public func waitForSleepers(_ count: Int, within timeout: Duration = .seconds(60)) async -> Bool {
        let id = UUID()
        let deadline = Task {
            // A deadline, not a wait: the caller awaits the sleepers themselves; this only bounds that wait when
            // what should sleep on the clock never does, which no event reports.
            try? await Task.sleep(for: timeout)
            let watcher = self.state.withLock {
                state -> (count: Int, continuation: CheckedContinuation<Bool, Never>)? in
                guard let watcher = state.watchers.removeValue(forKey: id) else {
                    state.expired.insert(id)
                    return nil
                }
                return watcher
            }
            watcher?.continuation.resume(returning: false)
        }
        defer { deadline.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let ready = state.withLock { state -> Bool? in
                if state.sleepers.count >= count { return true }
                if state.expired.remove(id) != nil { return false }
                state.watchers[id] = (count, continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// The watchers whose count is reached, removed from `state`.
    private static func due(_ state: inout State) -> [CheckedContinuation<Bool, Never>] {
        let count = state.sleepers.count
        let ready = state.watchers.filter { $0.value.count <= count }
        for id in ready.keys { state.watchers[id] = nil }
        return ready.values.map(\.continuation)
    }
}
