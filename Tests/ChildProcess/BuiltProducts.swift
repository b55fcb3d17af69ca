import Foundation
import Glibc

/// An executable this package builds, beside the test binary.
public func builtProduct(_ name: String) throws -> URL {
    let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let url = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent(name)
    guard FileManager.default.isExecutableFile(atPath: url.path) else {
        throw ChildProcessError(.spawnFailed, "\(name) is not built beside the tests at \(url.path)")
    }
    return url
}

/// The `saved N` lines of the child's standard output.
public final class SavedLines {
    private let descriptor: Int32
    private var pending: [UInt8] = []
    public private(set) var last: Int?

    public init(descriptor: Int32) { self.descriptor = descriptor }

    /// Blocks until a `saved` line arrives; `false` on end of file or timeout.
    public func waitForFirst(timeoutMilliseconds: Int32) -> Bool {
        let deadline = Int64(DispatchTime.now().uptimeNanoseconds) + Int64(timeoutMilliseconds) * 1_000_000
        while last == nil {
            let remaining = deadline - Int64(DispatchTime.now().uptimeNanoseconds)
            guard remaining > 0 else { return false }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining / 1_000_000 + 1, Int64(Int32.max))))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return false }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = read(descriptor, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            consume(buffer[..<count])
        }
        return true
    }

    /// Reads everything the (dead) child wrote.
    public func drain() { consume(readAvailable(descriptor)[...]) }

    private func consume(_ bytes: ArraySlice<UInt8>) {
        pending += bytes
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: pending[..<newline], as: UTF8.self)
            pending.removeSubrange(...newline)
            if line.hasPrefix("saved "), let generation = Int(line.dropFirst(6)) { last = generation }
        }
    }
}

/// Everything readable from `descriptor` now, without waiting (the writer is dead; other children may hold copies of
/// the pipe, so end of file may never come).
public func readAvailable(_ descriptor: Int32) -> [UInt8] {
    let flags = fcntl(descriptor, F_GETFL)
    _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(descriptor, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { return result }
        result += buffer[..<count]
    }
}
