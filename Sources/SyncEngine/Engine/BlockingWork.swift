import Dispatch

/// Runs blocking work — scanning, chunking, flushing, waiting for coordinated access — on a Dispatch thread, so
/// it never holds one of the few threads Swift concurrency shares among every task of the process.
enum BlockingWork {
    /// Runs `work` on a queue of its own, whose thread Dispatch's overcommitting pool provides.
    ///
    /// Not on `DispatchQueue.global()`: on Linux that queue is the pool Swift concurrency runs on, which has one
    /// thread per core and adds one only after a while when they block. A coordinated read that waits there for a
    /// file presenter, whose answer needs a thread of the same pool, stalled the engine for seconds on two cores.
    static func run<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue(label: "SyncEngine.BlockingWork").async { continuation.resume(with: Result { try work() }) }
        }
    }
}
