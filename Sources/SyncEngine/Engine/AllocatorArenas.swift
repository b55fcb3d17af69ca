import Foundation

/// Tuning for a process whose main work is a long-running engine or service (`ubiquity sync`, `ubiquity server`),
/// not for apps that embed an engine: they own their process's allocator.
public enum AllocatorArenas {
    /// Limits glibc's allocator to as many arenas as the machine has cores (its default is eight a core). Engines and
    /// the service allocate on whichever of Swift's threads their tasks run, so each thread soon has an arena of its
    /// own, and freed memory stays with its arena. With the limit, an engine process took its 10,000 small files up
    /// in 33 s instead of 79–89 s and held 80–97 MiB after a restart instead of 131 MiB (`ubiquity-bench
    /// sync.memory`, 2 cores). Call it before the work starts.
    /// - Returns: Whether the limit was set (not where the C library is not glibc).
    @discardableResult
    public static func limitToCores() -> Bool {
        #if os(Linux)
            // `mallopt(3)` and `M_ARENA_MAX` (-8), which Glibc's Swift module leaves out.
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return false }
            let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
            return mallopt(-8, Int32(clamping: max(2, ProcessInfo.processInfo.activeProcessorCount))) == 1
        #else
            return false
        #endif
    }

    /// Gives the free memory inside glibc's arenas back to the system (`malloc_trim(3)`): the pages of free chunks
    /// anywhere in a heap, not only at its top. Many small allocations of different lifetimes (requests, records,
    /// buffers of thousands of small files) leave a heap mostly free but fragmented, and a process's resident memory
    /// then stays at its highest. Costs a walk of the free lists (about a millisecond for tens of megabytes).
    /// - Returns: Whether memory was given back.
    @discardableResult
    public static func releaseFreeMemory() -> Bool {
        #if os(Linux)
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return false }
            let trim = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
            return trim(0) == 1
        #else
            return false
        #endif
    }

    /// Gives free memory back (``releaseFreeMemory()``) every `interval` on `clock` until the task is cancelled.
    public static func releaseFreeMemory(
        every interval: Duration, clock: any Clock<Duration> = ContinuousClock()
    ) async {
        while (try? await clock.sleep(for: interval)) != nil {
            releaseFreeMemory()
        }
    }
}
