import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One inotify instance and the background thread that reads it, for all presenters of the process.
///
/// The thread reads events, waits until a burst has been quiet for a few milliseconds (at most 50 ms), and hands the
/// whole batch to `handler`. It runs for the life of the process once started.
final class FileSystemWatcher: Sendable {
    /// An inotify event: the watch it came from, what happened, and the name inside the watched directory.
    struct Event: Sendable {
        var watch: Int32
        var mask: UInt32
        var cookie: UInt32
        var name: String
    }

    /// The events presenters care about in a watched directory.
    static let mask = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_ATTRIB | IN_DELETE_SELF
            | IN_MOVE_SELF | IN_ONLYDIR
    )

    private let fd: Int32

    /// Starts watching; `nil` if inotify is unavailable.
    init?(handler: @escaping @Sendable ([Event]) -> Void) {
        let fd = inotify_init1(Int32(O_CLOEXEC))
        guard fd >= 0 else { return nil }
        self.fd = fd
        let thread = Thread { FileSystemWatcher.run(fd: fd, handler: handler) }
        thread.name = "DocumentKit.FileSystemWatcher"
        thread.start()
    }

    /// Watches the directory at `path`; returns the watch descriptor.
    func add(_ path: String) -> Int32? {
        let wd = inotify_add_watch(fd, path, Self.mask)
        return wd >= 0 ? wd : nil
    }

    /// Stops a watch.
    func remove(_ watch: Int32) {
        _ = inotify_rm_watch(fd, watch)
    }

    private static func run(fd: Int32, handler: @Sendable ([Event]) -> Void) {
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        var batch: [Event] = []
        var burstStart = Date()
        while true {
            var pollFD = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let timeout: Int32 = batch.isEmpty ? -1 : 5
            let ready = poll(&pollFD, 1, timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if ready > 0 {
                let count = read(fd, buffer, capacity)
                if count < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    return
                }
                if batch.isEmpty { burstStart = Date() }
                batch.append(contentsOf: parse(buffer, count: count))
                if Date().timeIntervalSince(burstStart) < 0.05 { continue }
            }
            if !batch.isEmpty {
                handler(batch)
                batch.removeAll()
            }
        }
    }

    private static func parse(_ buffer: UnsafeMutableRawPointer, count: Int) -> [Event] {
        var events: [Event] = []
        var offset = 0
        let headerSize = MemoryLayout<inotify_event>.size
        while offset + headerSize <= count {
            let header = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
            let nameStart = buffer.advanced(by: offset + headerSize)
            let nameBytes = UnsafeRawBufferPointer(start: nameStart, count: Int(header.len))
            let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
            events.append(Event(watch: header.wd, mask: header.mask, cookie: header.cookie, name: name))
            offset += headerSize + Int(header.len)
        }
        return events
    }
}
