import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs blocking test work — child processes, big computations — on a thread of its own, so it never holds one of
/// the few threads Swift concurrency shares among every test running at once.
///
/// Not a Dispatch global queue: on Linux, Swift concurrency's pool *is* the default global queue, which grows when
/// its threads block but not when they compute, so a long computation there starves every other test's tasks (a
/// two-core machine has two such threads). A thread of its own is scheduled by the kernel beside them instead.
public func offPool<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.stackSize = 8 << 20
        thread.start()
    }
}

/// Waits (up to `timeout`) until `condition` holds, checking every 20 ms on the caller's actor; returns whether it did.
public func eventually(
    _ timeout: Duration = .seconds(60), isolation: isolated (any Actor)? = #isolation, _ condition: () -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline, !Task.isCancelled {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}

/// The value of `task` once it finishes, or once `timeout` passes and it is cancelled: a task collecting events from
/// a stream ends when cancelled (the stream's iteration does), so a test that awaits events which never come fails
/// on what was collected instead of waiting forever. A time limit would not do: it cancels the test, not the task.
public func finished<Value: Sendable>(
    _ task: Task<Value, Never>, within timeout: Duration = .seconds(60)
) async -> Value {
    let deadline = Task {
        // A deadline, not a wait: the test awaits the task's own end; this sleep only bounds it, since events that
        // never come have nothing to be awaited.
        try? await Task.sleep(for: timeout)
        task.cancel()
    }
    defer { deadline.cancel() }
    return await task.value
}

/// Runs a long computation that waits on nothing — a simulation's thousands of histories — on a thread of its own at
/// the lowest scheduling priority, so it takes the CPU the other tests leave idle and never the time a test waiting
/// for a real event needs: a test that waits holds a deadline, a simulation only a total.
///
/// Not for work that starts child processes: they would inherit the priority.
public func inBackground<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await offPool {
        #if os(Linux)
            // On Linux the nice value belongs to each thread, and 0 names the calling one: this lowers this thread.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
        #endif
        return try work()
    }
}
