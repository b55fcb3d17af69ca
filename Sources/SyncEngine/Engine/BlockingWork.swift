import Dispatch

/// Runs blocking work — scanning, chunking, flushing, waiting for coordinated access — on a Dispatch thread, so
/// it never holds one of the few threads Swift concurrency shares among every task of the process.
enum BlockingWork {
    static func run<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }
}
