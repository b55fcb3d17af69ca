import Foundation
import Synchronization

/// Hands every value to every listener; listeners come and go (each is an `AsyncStream` ended when its iteration
/// ends, or when the broadcast finishes).
package final class EventBroadcast<Value: Sendable>: Sendable {
    private let listeners = Mutex<[UUID: AsyncStream<Value>.Continuation]?>([:])

    /// A stream of every value sent from now on.
    package init() {}

    package func stream() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(8192))
        let id = UUID()
        let added = listeners.withLock { listeners -> Bool in
            guard listeners != nil else { return false }
            listeners?[id] = continuation
            return true
        }
        guard added else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.listeners.withLock { $0?.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sends `value` to every listener.
    package func send(_ value: Value) {
        for continuation in listeners.withLock({ Array(($0 ?? [:]).values) }) { continuation.yield(value) }
    }

    /// Ends every stream; later streams end at once.
    package func finish() {
        let all = listeners.withLock { listeners in
            defer { listeners = nil }
            return Array((listeners ?? [:]).values)
        }
        for continuation in all { continuation.finish() }
    }
}
