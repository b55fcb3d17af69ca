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
///
/// Every watcher of a process shares one inotify instance and one reading thread (``WatchHub``): the kernel allows
/// each user only a few instances (`fs.inotify.max_user_instances`, 128 by default), and a process that syncs many
/// containers must not use one per container. `changed` runs on that thread, so it must return quickly (the engine's
/// only notes the scope and wakes its loop).
public final class ContainerWatcher: Sendable {
    /// How long a burst must be quiet before `changed` is called.
    public let debounce: Duration
    let root: String
    let changed: @Sendable (ScanScope) -> Void
    private let stopped = Atomic<Bool>(false)
    /// The burst being gathered: events add to it and the hub's thread takes it, both on that thread.
    let burst = Mutex(Burst())

    /// What a watcher has gathered since its last call.
    struct Burst {
        var pending = false
        var settled = false
        var scope = ScanScope.paths([])
        var started = ContinuousClock.now
        var last = ContinuousClock.now
    }

    /// Starts watching `folder`.
    /// - Throws: `POSIXError` when inotify is unavailable (no instance could be made: the per-user limit, say).
    public init(
        folder: URL, debounce: Duration = .milliseconds(30), changed: @escaping @Sendable (ScanScope) -> Void
    ) throws {
        self.root = folder.path
        self.debounce = debounce
        self.changed = changed
        try WatchHub.shared.add(self)
    }

    /// Stops watching; `changed` is not called afterwards.
    public func stop() {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        WatchHub.shared.remove(self)
    }

    var isStopped: Bool { stopped.load(ordering: .sequentiallyConsistent) }

    /// When the burst under way is due: once it has been quiet long enough, or has lasted ten times ``debounce``.
    func due(_ burst: Burst) -> ContinuousClock.Instant? {
        guard burst.pending else { return nil }
        // A burst whose last event finished a write (a file closed after writing, or renamed into place) is most
        // likely whole: it waits only a few milliseconds for more.
        let quiet = burst.settled ? min(debounce, .milliseconds(5)) : debounce
        return min(burst.last + quiet, burst.started + debounce * 10)
    }
}

/// The process's one inotify instance, the watches of every ``ContainerWatcher`` on it, and the thread that reads its
/// events, hands each to the watchers of its folder, and calls each watcher once its burst is due.
///
/// Two watchers of the same folder share its watch descriptor (the kernel gives one per inode and instance); it is
/// removed when the last of them stops. The instance is made on first use and kept for the life of the process; if
/// it cannot be made, the next watcher tries again.
final class WatchHub: Sendable {
    static let shared = WatchHub()

    private static let mask = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_ONLYDIR)

    private struct State {
        var descriptor: Int32?
        /// Each watch's watchers, with the folder each knows it by.
        var watches: [Int32: [ObjectIdentifier: (watcher: ContainerWatcher, path: String)]] = [:]
        var watchers: [ObjectIdentifier: ContainerWatcher] = [:]
    }

    private let state = Mutex(State())

    /// Starts watching `watcher`'s folder tree.
    func add(_ watcher: ContainerWatcher) throws {
        try state.withLock { state in
            let descriptor = try Self.descriptor(&state)
            state.watchers[ObjectIdentifier(watcher)] = watcher
            Self.addTree(watcher.root, of: watcher, descriptor: descriptor, to: &state)
        }
    }

    /// Stops watching `watcher`'s folders; a watch no other watcher shares is removed from the instance.
    func remove(_ watcher: ContainerWatcher) {
        let id = ObjectIdentifier(watcher)
        state.withLock { state in
            state.watchers[id] = nil
            for (watch, var holders) in state.watches where holders[id] != nil {
                holders[id] = nil
                if holders.isEmpty {
                    state.watches[watch] = nil
                    if let descriptor = state.descriptor { _ = inotify_rm_watch(descriptor, watch) }
                } else {
                    state.watches[watch] = holders
                }
            }
        }
    }

    /// The instance, made (and its reading thread started) on first use.
    private static func descriptor(_ state: inout State) throws -> Int32 {
        if let descriptor = state.descriptor { return descriptor }
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ENOSYS) }
        state.descriptor = descriptor
        // The thread lives as long as the process; it blocks in `poll`, so it is a thread, not a task.
        let thread = Thread { WatchHub.shared.run(descriptor) }
        thread.name = "SyncEngine.WatchHub"
        thread.start()
        return descriptor
    }

    /// Watches `path` and every folder below it (but not a container's private folder) for `watcher`.
    private static func addTree(
        _ path: String, of watcher: ContainerWatcher, descriptor: Int32, to state: inout State
    ) {
        let watch = inotify_add_watch(descriptor, path, mask)
        if watch >= 0 { state.watches[watch, default: [:]][ObjectIdentifier(watcher)] = (watcher, path) }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
        for name in names where !(path == watcher.root && name == ItemPath.reservedFolderName) {
            var info = stat()
            let child = path + "/" + name
            if lstat(child, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
                addTree(child, of: watcher, descriptor: descriptor, to: &state)
            }
        }
    }

    private func run(_ descriptor: Int32) {
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, timeout())
            if ready > 0 {
                let count = read(descriptor, buffer, capacity)
                if count > 0 { route(buffer, count: count, descriptor: descriptor) }
            }
            callDue()
        }
    }

    /// Milliseconds until the earliest burst is due; -1 (wait for an event) when none is pending.
    private func timeout() -> Int32 {
        let watchers = state.withLock { Array($0.watchers.values) }
        let due = watchers.compactMap { watcher in watcher.burst.withLock { watcher.due($0) } }.min()
        guard let due else { return -1 }
        let left = due - .now
        guard left > .zero else { return 0 }
        return Int32(
            min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 1000))
    }

    /// Calls each watcher whose burst is due, with what it gathered.
    private func callDue() {
        let watchers = state.withLock { Array($0.watchers.values) }
        let now = ContinuousClock.now
        for watcher in watchers {
            let scope: ScanScope? = watcher.burst.withLock { burst in
                guard let due = watcher.due(burst), due <= now else { return nil }
                defer { burst = ContainerWatcher.Burst() }
                return burst.scope
            }
            if let scope, !watcher.isStopped { watcher.changed(scope) }
        }
    }

    /// Hands each event to the watchers of its folder, and watches folders created or moved in (and what is already
    /// inside them) for those watchers.
    private func route(_ buffer: UnsafeMutableRawPointer, count: Int, descriptor: Int32) {
        var named: [ObjectIdentifier: (watcher: ContainerWatcher, paths: Set<String>, finished: Bool)] = [:]
        var overflowed = false
        state.withLock { state in
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = offset + MemoryLayout<inotify_event>.size
                defer { offset = nameStart + Int(event.len) }
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    overflowed = true
                    continue
                }
                guard let holders = state.watches[event.wd] else { continue }
                if event.mask & UInt32(IN_IGNORED) != 0 {
                    state.watches[event.wd] = nil  // the folder is gone; so is its watch
                    continue
                }
                let finished =
                    event.mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO) != 0 && event.mask & UInt32(IN_ISDIR) == 0
                let name =
                    event.len > 0 ? String(cString: (buffer + nameStart).assumingMemoryBound(to: CChar.self)) : ""
                for (id, holder) in holders {
                    let (watcher, parent) = holder
                    if parent == watcher.root && name == ItemPath.reservedFolderName { continue }
                    let full = name.isEmpty ? parent : parent + "/" + name
                    var entry = named[id] ?? (watcher, [], false)
                    if full.count > watcher.root.count {
                        entry.paths.insert(String(full.dropFirst(watcher.root.count + 1)))
                    }
                    entry.finished = finished
                    named[id] = entry
                    let isNewFolder =
                        event.mask & UInt32(IN_ISDIR) != 0 && event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0
                    if isNewFolder, !name.isEmpty, state.watchers[id] != nil {
                        Self.addTree(full, of: watcher, descriptor: descriptor, to: &state)
                    }
                }
            }
        }
        let now = ContinuousClock.now
        // Events were dropped: every watcher scans everything.
        let everyone = overflowed ? state.withLock { Array($0.watchers.values) } : []
        for watcher in everyone where named[ObjectIdentifier(watcher)] == nil {
            named[ObjectIdentifier(watcher)] = (watcher, [], false)
        }
        for (_, entry) in named {
            entry.watcher.burst.withLock { burst in
                if !burst.pending {
                    burst.pending = true
                    burst.started = now
                }
                burst.last = now
                burst.settled = entry.finished
                burst.scope = burst.scope.union(overflowed ? .everything : .paths(entry.paths))
            }
        }
    }
}
