import DocumentKit
import Foundation
import SyncEngine
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The simulation's clock, in nanoseconds since 1970: moved on only by the history, read by every disk.
final class SimulatedClock: Sendable {
    private let nanoseconds: Mutex<Int64>

    init(_ start: Int64 = 1_700_000_000_000_000_000) { nanoseconds = Mutex(start) }

    var now: Int64 { nanoseconds.withLock { $0 } }

    func advance(by amount: Int64) { nanoseconds.withLock { $0 += amount } }
}

/// One device's disk, in memory: files and folders by absolute path, with inodes and modification and status-change
/// times taken from the simulated clock (so two writes in one tick leave the same times, as on a coarse file system).
/// An inode number freed by a removal is the next one given out, as ext4 gives out a freed inode again at once: a
/// new file can have the number a removed or replaced one had, in the same tick with the same size. Open files and
/// users' saves follow a node by its serial, which is never given out again. It outlives the engines that use it:
/// a crashed engine's successor finds the disk as it was.
final class SimulatedVolume: @unchecked Sendable {
    struct Node {
        var isDirectory: Bool
        /// The number the disk reports, given out again once the node is gone.
        var inode: UInt64
        /// The node itself, never given out again: what an open file holds.
        var serial: UInt64
        /// When it was made.
        var born: Int64
        var bytes: [UInt8] = []
        var modified: Int64
        var changed: Int64
    }

    let device: UInt64
    let clock: SimulatedClock
    private let lock = NSLock()
    private var nodes: [String: Node] = [:]
    private var nextInode: UInt64 = 1
    /// Inode numbers of removed nodes, the last freed given out first.
    private var freedInodes: [UInt64] = []
    private var nextSerial: UInt64 = 1
    /// Folders whose permissions a user took away: the engine's disk (``SimulatedDisk``) cannot list them nor reach
    /// anything below them; users still can (as another user, or root, would).
    private var closed: Set<String> = []

    /// A folder whose disk is unmounted from the engine's view: in its place an empty folder of another device (the
    /// mount point), nothing below it. Users still see the disk, as when it is mounted elsewhere meanwhile.
    private var unmounted: String?

    /// The folders whose permissions were taken away.
    var closedFolders: Set<String> { locked { closed } }

    /// The folder unmounted from the engine's view, if any.
    var unmountedFolder: String? { locked { unmounted } }

    /// Unmounts the disk at `folder` from the engine's view (`nil`: mounts it again).
    func setUnmounted(_ folder: String?) { locked { unmounted = folder } }

    /// What the engine's disk finds at `path` while a disk is unmounted: the empty mount point's identity for the
    /// folder itself, `.some(nil)` (nothing) below it, `nil` when `path` is not in it.
    func mountPoint(_ path: String) -> FileIdentity?? {
        locked {
            guard let unmounted else { return nil }
            if path == unmounted {
                var identity = FileIdentity(device: device + 1_000_000, inode: 2, size: 0, modified: 0, changed: 0)
                identity.mode = UInt32(S_IFDIR) | 0o755
                identity.capturedAt = clock.now
                return .some(identity)
            }
            return path.hasPrefix(unmounted + "/") ? .some(nil) : nil
        }
    }

    /// Takes the permissions of the folder at `path` away (`open == false`), or gives them back.
    func setPermissions(of path: String, open: Bool) {
        locked {
            if open { closed.remove(path) } else { closed.insert(path) }
        }
    }

    /// Whether the engine's disk can reach `path`: nothing below a closed folder is, and (`itself`) a closed folder
    /// cannot be listed.
    func isReachable(_ path: String, itself: Bool = false) -> Bool {
        locked {
            closed.isEmpty || !closed.contains { path.hasPrefix($0 + "/") || (itself && path == $0) }
        }
    }

    init(device: UInt64, clock: SimulatedClock) {
        self.device = device
        self.clock = clock
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    private static func parent(of path: String) -> String { (path as NSString).deletingLastPathComponent }

    /// A new node's inode number and serial.
    private func newNode(isDirectory: Bool, at now: Int64) -> Node {
        defer { nextSerial += 1 }
        let inode: UInt64
        if let freed = freedInodes.popLast() {
            inode = freed
        } else {
            inode = nextInode
            nextInode += 1
        }
        return Node(isDirectory: isDirectory, inode: inode, serial: nextSerial, born: now, modified: now, changed: now)
    }

    /// Removes the node at `path`, freeing its inode number.
    private func drop(_ path: String) {
        guard let node = nodes.removeValue(forKey: path) else { return }
        freedInodes.append(node.inode)
    }

    // MARK: What the disk does

    func identity(at path: String) -> FileIdentity? {
        locked {
            guard let node = nodes[path] else { return nil }
            var identity = FileIdentity(
                device: device, inode: node.inode, size: Int64(node.bytes.count), modified: node.modified,
                changed: node.changed)
            identity.mode = node.isDirectory ? UInt32(S_IFDIR) | 0o755 : UInt32(S_IFREG) | 0o644
            identity.born = node.born
            identity.capturedAt = clock.now
            return identity
        }
    }

    func children(of path: String) throws -> [String] {
        try locked {
            guard let node = nodes[path] else { throw POSIXError(.ENOENT) }
            guard node.isDirectory else { throw POSIXError(.ENOTDIR) }
            let prefix = path + "/"
            return nodes.keys.filter { $0.hasPrefix(prefix) && !$0.dropFirst(prefix.count).contains("/") }
                .map { String($0.dropFirst(prefix.count)) }
        }
    }

    func makeDirectory(_ path: String) throws {
        try locked { try makeDirectoryLocked(path) }
    }

    private func makeDirectoryLocked(_ path: String) throws {
        if let node = nodes[path] {
            guard node.isDirectory else { throw POSIXError(.EEXIST) }
            return
        }
        let parent = Self.parent(of: path)
        if parent != path, parent != "/" { try makeDirectoryLocked(parent) }
        let now = clock.now
        nodes[path] = newNode(isDirectory: true, at: now)
    }

    func remove(_ path: String) throws {
        try locked {
            guard nodes[path] != nil else { throw POSIXError(.ENOENT) }
            let prefix = path + "/"
            for key in nodes.keys.sorted() where key == path || key.hasPrefix(prefix) { drop(key) }
        }
    }

    func removeEmptyDirectory(_ path: String) -> Bool {
        locked {
            guard let node = nodes[path] else { return true }
            let prefix = path + "/"
            guard node.isDirectory, !nodes.keys.contains(where: { $0.hasPrefix(prefix) }) else { return false }
            drop(path)
            return true
        }
    }

    /// `rename(2)`: onto nothing, or (with `replacing`) onto a file; a folder moves with everything inside it.
    func rename(_ source: String, to target: String, replacing: Bool) throws {
        try locked {
            guard var node = nodes[source] else { throw POSIXError(.ENOENT) }
            guard nodes[Self.parent(of: target)]?.isDirectory == true else { throw POSIXError(.ENOENT) }
            if let existing = nodes[target] {
                guard replacing else { throw POSIXError(.EEXIST) }
                guard !existing.isDirectory, !node.isDirectory else { throw POSIXError(.EISDIR) }
            }
            guard !target.hasPrefix(source + "/") else { throw POSIXError(.EINVAL) }
            if target != source { drop(target) }  // the file replaced
            let prefix = source + "/"
            let moved = nodes.filter { $0.key.hasPrefix(prefix) }
            for key in moved.keys { nodes[key] = nil }
            nodes[source] = nil
            node.changed = clock.now
            nodes[target] = node
            for (key, member) in moved { nodes[target + "/" + key.dropFirst(prefix.count)] = member }
        }
    }

    /// `utimensat(2)` of the modification time: the status-change time becomes now.
    func setModified(_ path: String, to nanoseconds: Int64) throws {
        try locked {
            guard nodes[path] != nil else { throw POSIXError(.ENOENT) }
            nodes[path]!.modified = nanoseconds
            nodes[path]!.changed = clock.now
        }
    }

    /// The serial of the file at `path`, made empty when missing.
    func openFile(_ path: String, create: Bool) throws -> UInt64 {
        try locked {
            if let node = nodes[path] {
                guard !node.isDirectory else { throw POSIXError(.EISDIR) }
                return node.serial
            }
            guard create else { throw POSIXError(.ENOENT) }
            guard nodes[Self.parent(of: path)]?.isDirectory == true else { throw POSIXError(.ENOENT) }
            let node = newNode(isDirectory: false, at: clock.now)
            nodes[path] = node
            return node.serial
        }
    }

    /// Changes the file with `serial`, wherever it is now (an open file follows its node, not its path); a file
    /// removed since is written nowhere.
    func change(serial: UInt64, _ body: (inout [UInt8]) throws -> Void) rethrows {
        try locked {
            guard let path = nodes.first(where: { !$0.value.isDirectory && $0.value.serial == serial })?.key else {
                return
            }
            try body(&nodes[path]!.bytes)
            nodes[path]!.modified = clock.now
            nodes[path]!.changed = clock.now
        }
    }

    func bytes(serial: UInt64) -> [UInt8]? {
        locked { nodes.values.first { !$0.isDirectory && $0.serial == serial }?.bytes }
    }

    // MARK: What a user does

    /// The file at `path`, when one is there.
    func file(at path: String) -> Node? { locked { nodes[path].flatMap { $0.isDirectory ? nil : $0 } } }

    /// Every file below `folder`, by path relative to it.
    func files(below folder: String) -> [String: Node] {
        locked {
            let prefix = folder + "/"
            var found: [String: Node] = [:]
            for (path, node) in nodes where !node.isDirectory && path.hasPrefix(prefix) {
                found[String(path.dropFirst(prefix.count))] = node
            }
            return found
        }
    }

    /// Writes `bytes` into the file at `path`, in place (the same node) when one is there. Returns its serial.
    @discardableResult
    func write(_ bytes: [UInt8], at path: String) throws -> UInt64 {
        let serial = try openFile(path, create: true)
        change(serial: serial) { $0 = bytes }
        return serial
    }

    /// A safe save: `bytes` written to a new file, renamed over `path`. Returns the new file's serial.
    @discardableResult
    func saveSafely(_ bytes: [UInt8], at path: String) throws -> UInt64 {
        let temporary = Self.parent(of: path) + "/." + (path as NSString).lastPathComponent + ".\(nextSerial).tmp"
        let serial = try write(bytes, at: temporary)
        try rename(temporary, to: path, replacing: true)
        return serial
    }
}

/// What a simulated engine does when it is killed: thrown from the disk call that was its last.
struct SimulatedCrash: Error {}

/// One engine's view of its device's disk: the ``LocalDisk`` it is given. Once the engine is killed the view
/// refuses everything, so nothing a dead engine still runs reaches the disk; a change that needs space may fail, as
/// on a full disk, a read or a listing may fail, as on a failing disk or an item made unreadable, and a coordinated
/// access may fail, as when its locks are not had in time (``beforeAccess``); and every change it makes may be the engine's last (``afterChange``).
final class SimulatedDisk: LocalDisk, @unchecked Sendable {
    /// What an access that may fail does.
    enum Access {
        /// Makes a file or folder, writes bytes, or renames: it needs space.
        case growth
        /// Opens a file to read it.
        case read
        /// Lists a folder.
        case list
        /// Takes a coordinated access of items.
        case coordination
    }

    let volume: SimulatedVolume
    private let alive = Mutex(true)
    /// Called before each access that may fail: it may refuse it (and throw, `ENOSPC` or `EIO`).
    let beforeAccess: @Sendable (Access) throws -> Void
    /// Called after each change the engine makes to the disk: it may kill the engine there (and throw).
    let afterChange: @Sendable () throws -> Void
    /// Called on every call, to check the simulation runs everything on its own thread.
    let onCall: @Sendable () -> Void

    init(
        volume: SimulatedVolume, beforeAccess: @escaping @Sendable (Access) throws -> Void = { _ in },
        afterChange: @escaping @Sendable () throws -> Void, onCall: @escaping @Sendable () -> Void
    ) {
        self.volume = volume
        self.beforeAccess = beforeAccess
        self.afterChange = afterChange
        self.onCall = onCall
    }

    /// Cuts the engine off its disk.
    func kill() { alive.withLock { $0 = false } }

    var isAlive: Bool { alive.withLock { $0 } }

    private func check() throws {
        onCall()
        guard isAlive else { throw SimulatedCrash() }
    }

    /// Throws `EACCES` for what a folder whose permissions were taken away keeps from being reached, and `ENOENT`
    /// for what an unmounted disk held.
    private func reach(_ urls: URL..., itself: Bool = false) throws {
        for url in urls {
            if case .some(.none) = volume.mountPoint(url.path) { throw POSIXError(.ENOENT) }
            if !volume.isReachable(url.path, itself: itself) { throw POSIXError(.EACCES) }
        }
    }

    private func changed() throws {
        try afterChange()
    }

    /// `<folder>/.` is the folder itself (the simulated volume has no symbolic links to follow).
    private static func itself(_ url: URL) -> URL {
        url.path.hasSuffix("/.") ? URL(fileURLWithPath: String(url.path.dropLast(2))) : url
    }

    func identity(at url: URL) -> FileIdentity? {
        onCall()
        let url = Self.itself(url)
        if let mounted = volume.mountPoint(url.path) { return isAlive ? mounted : nil }
        return isAlive && volume.isReachable(url.path) ? volume.identity(at: url.path) : nil
    }

    func lookUp(_ url: URL) throws -> FileIdentity? {
        try check()
        let url = Self.itself(url)
        if let mounted = volume.mountPoint(url.path) { return mounted }
        try reach(url)
        return volume.identity(at: url.path)
    }

    func contentsOfDirectory(at url: URL) throws -> [String] {
        try check()
        try reach(url, itself: true)
        try beforeAccess(.list)
        if volume.mountPoint(url.path) != nil { return [] }
        return try volume.children(of: url.path)
    }

    func createDirectory(at url: URL) throws {
        try check()
        try reach(url)
        if volume.identity(at: url.path) == nil { try beforeAccess(.growth) }
        try volume.makeDirectory(url.path)
        try changed()
    }

    func removeItem(at url: URL) throws {
        try check()
        try reach(url)
        try volume.remove(url.path)
        try changed()
    }

    func removeEmptyDirectory(at url: URL) -> Bool {
        guard (try? check()) != nil, (try? reach(url)) != nil else { return false }
        let removed = volume.removeEmptyDirectory(url.path)
        return (try? changed()) != nil && removed
    }

    func moveItem(at source: URL, to target: URL) throws {
        try check()
        try reach(source, target)
        try beforeAccess(.growth)
        try volume.rename(source.path, to: target.path, replacing: false)
        try changed()
    }

    func replaceItem(at target: URL, withItemAt source: URL) throws {
        try check()
        try reach(source, target)
        try beforeAccess(.growth)
        try volume.rename(source.path, to: target.path, replacing: true)
        try changed()
    }

    func setModificationTime(of url: URL, to nanoseconds: Int64) throws {
        try check()
        try reach(url)
        try volume.setModified(url.path, to: nanoseconds)
        try changed()
    }

    func openFile(at url: URL) throws -> any DiskFile {
        try check()
        try reach(url)
        if volume.identity(at: url.path) == nil { try beforeAccess(.growth) }
        return SimulatedFileHandle(disk: self, serial: try volume.openFile(url.path, create: true))
    }

    func openFileForReading(at url: URL) throws -> any DiskFile {
        try check()
        try reach(url)
        try beforeAccess(.read)
        return SimulatedFileHandle(disk: self, serial: try volume.openFile(url.path, create: false))
    }

    func chunksAndContentHash(ofFileAt url: URL, chunker: FileChunker) throws -> ChunkedContent {
        try check()
        try reach(url)
        try beforeAccess(.read)
        let serial = try volume.openFile(url.path, create: false)
        let bytes = volume.bytes(serial: serial) ?? []
        return bytes.withUnsafeBytes { chunker.chunksAndContentHash(of: $0) }
    }

    var blocksThreads: Bool { false }

    func coordinationBegins() throws {
        try check()
        try beforeAccess(.coordination)
    }

    /// An open file of the simulated disk.
    final class SimulatedFileHandle: DiskFile {
        let disk: SimulatedDisk
        let serial: UInt64

        init(disk: SimulatedDisk, serial: UInt64) {
            self.disk = disk
            self.serial = serial
        }

        func read(at offset: Int64, count: Int) -> Data? {
            guard (try? disk.check()) != nil, let bytes = disk.volume.bytes(serial: serial),
                offset + Int64(count) <= bytes.count
            else { return nil }
            return Data(bytes[Int(offset)..<Int(offset) + count])
        }

        func write(_ data: Data, at offset: Int64) throws {
            try disk.check()
            try disk.beforeAccess(.growth)
            disk.volume.change(serial: serial) { bytes in
                let end = Int(offset) + data.count
                if bytes.count < end { bytes += [UInt8](repeating: 0, count: end - bytes.count) }
                bytes.replaceSubrange(Int(offset)..<end, with: data)
            }
            try disk.changed()
        }

        func truncate(to size: Int64) throws {
            try disk.check()
            disk.volume.change(serial: serial) { bytes in
                if bytes.count > size {
                    bytes.removeLast(bytes.count - Int(size))
                } else {
                    bytes += [UInt8](repeating: 0, count: Int(size) - bytes.count)
                }
            }
        }

        func synchronize() throws { try disk.check() }
    }
}
