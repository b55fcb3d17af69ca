import Foundation
import Synchronization

/// Samples this process's resident memory on a thread of its own while something runs, keeping the peak, and
/// hands the peak so far to `report` about once a second.
final class MemorySampler: Sendable {
    private struct State {
        var peak = 0
        var running = true
    }

    private let state = Mutex(State())
    private let interval: Duration
    private let report: @Sendable (_ peakBytes: Int, _ elapsed: Duration) -> Void

    init(every interval: Duration, report: @escaping @Sendable (_ peakBytes: Int, _ elapsed: Duration) -> Void) {
        self.interval = interval
        self.report = report
    }

    /// Starts sampling now.
    func start() {
        let start = ContinuousClock.now
        state.withLock { $0.peak = ResidentMemory.bytes }
        // A thread of its own, not Swift's pool: the sampling must go on while the measured work blocks its thread.
        Thread.detachNewThread { [self] in
            var lastReport = start
            while true {
                let resident = ResidentMemory.bytes
                let (running, peak) = state.withLock { state in
                    state.peak = max(state.peak, resident)
                    return (state.running, state.peak)
                }
                guard running else { return }
                let now = ContinuousClock.now
                if now - lastReport >= .seconds(1) {
                    lastReport = now
                    report(peak, now - start)
                }
                Thread.sleep(forTimeInterval: Measure.microseconds(interval) / 1_000_000)
            }
        }
    }

    /// Stops sampling; returns the peak, a last sample included.
    func stop() -> Int {
        let resident = ResidentMemory.bytes
        return state.withLock { state in
            state.running = false
            state.peak = max(state.peak, resident)
            return state.peak
        }
    }
}

/// This process's resident set, read cheaply enough to sample often: the second field of `/proc/self/statm`.
enum ResidentMemory {
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// The resident set now, in bytes; 0 if it cannot be read.
    static var bytes: Int {
        let descriptor = open("/proc/self/statm", O_RDONLY)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return 0 }
        let fields = buffer[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * pageSize
    }

    /// Bytes in MiB.
    static func mebibytes(_ bytes: Int) -> Double { Double(bytes) / 1_048_576 }
}
