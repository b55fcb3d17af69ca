import Foundation
import Synchronization
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Watches a container folder and every folder in it (new ones as they appear) with inotify, and calls `changed`
/// once per burst of events, after the burst has been quiet for ``debounce`` (5 ms when its last event finished a
/// write: a file closed after writing or renamed into place), or has lasted ten times that, with the
/// paths the burst named (relative to the folder) — or ``ScanScope/everything`` when the kernel dropped events.
///
/// The engine scans those paths — comparing identities, reading no content. The private `.ubiquity/` folder is not
/// watched.
public final class ContainerWatcher: Sendable {
    /// How long a burst must be quiet before `changed` is called.
    public let debounce: Duration
    private let descriptor: Int32
    private let root: String
    private let stopped = Atomic<Bool>(false)
    private let watches = Mutex<[Int32: String]>([:])

    /// Starts watching `folder`.
    /// - Throws: `POSIXError` when inotify is unavailable.
    public init(
        folder: URL, debounce: Duration = .milliseconds(30), changed: @escaping @Sendable (ScanScope) -> Void
    ) throws {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ENOSYS) }
        self.descriptor = descriptor
        self.root = folder.path
        self.debounce = debounce
        addTree(root)
        // The reading thread lives until `stop()`; it blocks in `poll`, so it is a thread, not a task.
        let thread = Thread { [self] in run(changed) }
        thread.name = "SyncEngine.ContainerWatcher"
        thread.start()
    }

    /// Stops watching; `changed` is not called afterwards.
    public func stop() { stopped.store(true, ordering: .sequentiallyConsistent) }

    private static let mask = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_ONLYDIR)

    /// Watches `path` and every folder below it (but not the private folder).
    private func addTree(_ path: String) {
        let watch = inotify_add_watch(descriptor, path, Self.mask)
        if watch >= 0 { watches.withLock { $0[watch] = path } }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
        for name in names where !(path == root && name == ".ubiquity") {
            var info = stat()
            let child = path + "/" + name
            if lstat(child, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { addTree(child) }
        }
    }

    private func run(_ changed: @Sendable (ScanScope) -> Void) {
        defer { close(descriptor) }
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        let quiet = Int32(debounce.components.seconds * 1000 + debounce.components.attoseconds / 1_000_000_000_000_000)
        var pending = false
        var settled = false
        var scope = ScanScope.paths([])
        var burstStart = ContinuousClock.now
        while !stopped.load(ordering: .sequentiallyConsistent) {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            // A burst whose last event finished a write (a file closed after writing, or renamed into place) is
            // most likely whole: it waits only a few milliseconds for more.
            let ready = poll(&poller, 1, pending ? max(1, settled ? min(quiet, 5) : quiet) : 100)
            if ready > 0 {
                let count = read(descriptor, buffer, capacity)
                if count > 0 {
                    if !pending { burstStart = .now }
                    pending = true
                    let (named, finished) = handle(buffer, count: count)
                    scope = scope.union(named)
                    settled = finished
                    if ContinuousClock.now - burstStart < debounce * 10 { continue }
                }
            }
            if pending, ready == 0 || ContinuousClock.now - burstStart >= debounce * 10 {
                pending = false
                let burst = scope
                scope = .paths([])
                if !stopped.load(ordering: .sequentiallyConsistent) { changed(burst) }
            }
        }
    }

    /// Adds watches for folders created or moved in (and what is already inside them), and says which paths the
    /// events name.
    /// - Returns: The paths named, and whether the last event finished a write.
    private func handle(_ buffer: UnsafeMutableRawPointer, count: Int) -> (ScanScope, Bool) {
        var paths = Set<String>()
        var finished = false
        var offset = 0
        while offset + MemoryLayout<inotify_event>.size <= count {
            let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
            let nameStart = offset + MemoryLayout<inotify_event>.size
            defer { offset = nameStart + Int(event.len) }
            if event.mask & UInt32(IN_Q_OVERFLOW) != 0 { return (.everything, false) }
            finished = event.mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO) != 0 && event.mask & UInt32(IN_ISDIR) == 0
            guard let parent = watches.withLock({ $0[event.wd] }) else { continue }
            let name =
                event.len > 0 ? String(cString: (buffer + nameStart).assumingMemoryBound(to: CChar.self)) : ""
            if parent == root && name == ItemPath.reservedFolderName { continue }
            let full = name.isEmpty ? parent : parent + "/" + name
            if full.count > root.count { paths.insert(String(full.dropFirst(root.count + 1))) }
            if event.mask & UInt32(IN_ISDIR) != 0, event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0, !name.isEmpty {
                addTree(full)
            }
        }
        return (.paths(paths), finished)
    }
}
