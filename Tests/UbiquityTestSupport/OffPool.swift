import Dispatch

/// Runs blocking test work — child processes, big computations — on a Dispatch thread, so it never holds one of
/// the few threads Swift concurrency shares among every test running at once.
public func offPool<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}

/// Waits (up to `timeout`) until `condition` holds, checking every 20 ms on the caller's actor; returns whether it did.
public func eventually(
    _ timeout: Duration = .seconds(60), isolation: isolated (any Actor)? = #isolation, _ condition: () -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}
