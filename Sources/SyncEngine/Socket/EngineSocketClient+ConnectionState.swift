import Foundation
import Logging
import NIOCore
import Synchronization
import UbiquityProtocol

extension EngineSocketClient {
    /// What a client's connection is waiting for: answers by request id, and the listeners to events.
    final class ConnectionState: Sendable {
        private struct State {
            var nextID: UInt64 = 1
            var waiting: [UInt64: CheckedContinuation<EngineResponse.Outcome, any Error>] = [:]
            var listeners: [UUID: AsyncStream<SyncEvent>.Continuation] = [:]
            var isOpen = true
        }

        static let closed = ProtocolError(.engineUnavailable, "the connection to the engine is closed")

        private let state = Mutex(State())

        /// A new request id with its waiter, or `nil` when the connection is closed.
        func register(_ waiter: CheckedContinuation<EngineResponse.Outcome, any Error>) -> UInt64? {
            state.withLock { state in
                guard state.isOpen else { return nil }
                let id = state.nextID
                state.nextID += 1
                state.waiting[id] = waiter
                return id
            }
        }

        /// Ends a request that could not be sent.
        func fail(_ id: UInt64, with error: any Error) {
            state.withLock { $0.waiting.removeValue(forKey: id) }?.resume(throwing: error)
        }

        /// A stream of the events received from now on.
        func listen() -> AsyncStream<SyncEvent> {
            let (stream, continuation) = AsyncStream.makeStream(
                of: SyncEvent.self, bufferingPolicy: .bufferingNewest(4096))
            let id = UUID()
            let isOpen = state.withLock { state in
                if state.isOpen { state.listeners[id] = continuation }
                return state.isOpen
            }
            guard isOpen else {
                continuation.finish()
                return stream
            }
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
            }
            return stream
        }

        /// Hands a frame from the engine to its waiter or to the listeners.
        func receive(_ frame: ByteBuffer, logger: Logger) {
            switch try? EngineFrame.decode(EngineMessage.self, from: frame) {
            case .response(let response):
                guard let id = response.id, let waiter = state.withLock({ $0.waiting.removeValue(forKey: id) }) else {
                    logger.debug(
                        "engine answer to no waiting request",
                        metadata: ["id": "\(response.id.map(String.init) ?? "none")"])
                    return
                }
                waiter.resume(returning: response.outcome)
            case .event(let event):
                for listener in state.withLock({ Array($0.listeners.values) }) { listener.yield(event) }
            case nil:
                // A frame of a newer engine (an event this version does not know, say) is skipped.
                logger.debug("engine frame not understood", metadata: ["bytes": "\(frame.readableBytes)"])
            }
        }

        /// The connection ended: waiters fail, event streams finish.
        func end() {
            let (waiting, listeners) = state.withLock { state in
                state.isOpen = false
                defer {
                    state.waiting = [:]
                    state.listeners = [:]
                }
                return (Array(state.waiting.values), Array(state.listeners.values))
            }
            for waiter in waiting { waiter.resume(throwing: Self.closed) }
            for listener in listeners { listener.finish() }
        }
    }
}
