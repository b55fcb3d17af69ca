import Foundation
import SyncEngine
import Synchronization
import UbiquityProtocol

/// The engine a session uses, and who waits for the next one: an external engine may end (its process stopped) while
/// requests are on their way to it; the session reaches the next engine on its own (``ContainerSession/reconnect()``),
/// and a request the old one could not answer runs again there.
final class EngineSlot: Sendable {
    private struct State {
        var connection: EngineConnection
        /// How many times the connection was replaced.
        var generation = 0
        var closed = false
        var waiting: [UUID: CheckedContinuation<Void, any Error>] = [:]
    }

    private let state: Mutex<State>

    init(_ connection: EngineConnection) { state = Mutex(State(connection: connection)) }

    /// The connection now, and its generation.
    var current: (connection: EngineConnection, generation: Int) {
        state.withLock { ($0.connection, $0.generation) }
    }

    /// Takes another connection and wakes whoever waits for one.
    func replace(_ connection: EngineConnection) {
        let waiting = state.withLock { state in
            state.connection = connection
            state.generation += 1
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for waiter in waiting { waiter.resume() }
    }

    /// No connection follows any more: whoever waits for one is told the engine is gone.
    func close() {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for waiter in waiting {
            waiter.resume(throwing: UbiquityError(.engineUnavailable, "the container was closed"))
        }
    }

    /// Returns once the connection of a generation after `generation` is there.
    /// - Throws: ``UbiquityError/Code/engineUnavailable`` when the session closes first; `CancellationError`.
    func next(after generation: Int) async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready: Result<Void, any Error>? = state.withLock { state in
                    if state.closed {
                        return .failure(UbiquityError(.engineUnavailable, "the container was closed"))
                    }
                    if state.generation > generation { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiting[id] = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            state.withLock { $0.waiting.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }
}

extension ContainerSession {
    /// How long a request waits for the next engine when the one it was sent to ended.
    static let handoverLimit: Duration = .seconds(60)

    /// Runs `body` against the engine. When an external engine ends before it answers, the request waits for the
    /// engine that follows (another process's, or one embedded here under `.automatic`) and runs again there — a
    /// request made while engines change hands is not lost. Requests are ones that mean the same when repeated
    /// (download, evict, read, a round).
    /// - Throws: What the engine answered; ``ProtocolError/Code/engineUnavailable`` when no engine follows within
    ///   ``handoverLimit`` or the session closes.
    func withEngine<T: Sendable>(_ body: @Sendable (EngineConnection) async throws -> T) async throws -> T {
        let started = ContinuousClock.now
        while true {
            let (connection, generation) = slot.current
            do {
                return try await body(connection)
            } catch let error as ProtocolError where error.code == .engineUnavailable {
                guard case .external = connection, ContinuousClock.now - started < Self.handoverLimit else {
                    throw error
                }
                logger.notice(
                    "a request's engine ended; waiting for the next one", metadata: ["container": "\(layout.container)"]
                )
                do {
                    try await withThrowingTaskGroup(of: Bool.self) { group in
                        group.addTask { [slot] in
                            try await slot.next(after: generation)
                            return true
                        }
                        group.addTask {
                            try await Task.sleep(for: Self.handoverLimit - (ContinuousClock.now - started))
                            return false
                        }
                        let reached = try await group.next() ?? false
                        group.cancelAll()
                        if !reached { throw error }
                    }
                } catch is UbiquityError {
                    throw error
                }
            }
        }
    }
}
