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

extension RequestBatcher {
    /// A batcher whose batches are blocking work on `disk` (coordinated reads or writes of many files): at most
    /// `count` operations a batch, two batches at once, each run by `work` off the cooperative threads when the disk
    /// blocks them (``BlockingWork/run(_:)``).
    static func onDisk(
        count: Int, disk: any LocalDisk, work: @escaping @Sendable ([Operation]) -> [Result<Answer, any Error>]
    ) -> RequestBatcher {
        RequestBatcher(maximumCount: count, maximumBytes: count, concurrency: 2, size: { _ in 1 }) { operations in
            disk.blocksThreads ? try await BlockingWork.run { work(operations) } : work(operations)
        }
    }
}
