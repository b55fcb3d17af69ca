import Dispatch

/// Runs blocking test work — child processes, big computations — on a Dispatch thread, so it never holds one of
/// the few threads Swift concurrency shares among every test running at once.
func offPool<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}
