import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The presenters registered in this process, what each last knew of its item, and the file watching that tells
/// them about other processes' changes.
///
/// Presenters are held weakly: one that is deallocated drops out (but should be removed explicitly, as on Apple's
/// platforms). For each, the registry records the canonical path of its item, the item's ``FileIdentity``, an
/// `O_PATH` descriptor on the item (to find where it went when it is moved), and identities of subitems it was told
/// about. Coordinated writes in this process update these records, so the watcher stays quiet about them.
final class FilePresenterRegistry: @unchecked Sendable {
    // @unchecked Sendable: all mutable state is only touched while `lock` is held; presenters are called on their
    // own queues after the lock is released.

    /// The registry of this process.
    static let shared = FilePresenterRegistry()

    struct Entry {
        weak var presenter: (any FilePresenter)?
        var order: Int
        var path: String?
        /// The path the presenter's own URL gave when last read. The record follows the item when the registry sees
        /// it move, before the presenter is told and updates its URL; a URL still naming the old place is not news,
        /// only one that differs from what the presenter last said (the presenter moved itself).
        var reportedPath: String?
        var identity: FileIdentity?
        var pathFD: Int32 = -1
        /// Subitem path → identity last announced (`.some(nil)`: announced as gone).
        var subitems: [String: FileIdentity?] = [:]
    }

    /// A registered presenter and the canonical path of its item.
    struct Registered: Sendable {
        var presenter: any FilePresenter
        var path: String
        var id: ObjectIdentifier { ObjectIdentifier(presenter) }
    }

    let lock = NSLock()
    /// Held while presenters' URLs are read and what they said is recorded (taken before `lock`, never inside it).
    /// A read and its recording must not interleave with another's: a coordination that read a presenter's URL just
    /// before the presenter heard of a move, and recorded it after another coordination had recorded the new place,
    /// would send the record back to where the item was, and changes at its new place would go unheard.
    private let reports = NSLock()
    var entries: [ObjectIdentifier: Entry] = [:]
    var nextOrder = 0
    /// Keys being written by coordinations of this process right now: the watcher leaves their presenters alone.
    var activeWrites: [String: Int] = [:]
    var watcher: FileSystemWatcher?
    var watchByPath: [String: Int32] = [:]
    var pathByWatch: [Int32: String] = [:]

    // MARK: Registration

    func add(_ presenter: any FilePresenter) {
        reports.lock()
        defer { reports.unlock() }
        let id = ObjectIdentifier(presenter)
        let path = Self.canonicalPath(of: presenter)
        lock.withLock {
            if watcher == nil {
                watcher = FileSystemWatcher { [unowned self] events in self.handle(events) }
            }
            if entries[id]?.presenter == nil {
                if let stale = entries[id] { closeFD(stale.pathFD) }
                entries[id] = Entry(presenter: presenter, order: nextOrder)
                nextOrder += 1
            }
            entries[id]?.reportedPath = path
            setPath(path, of: id)
            syncWatches()
        }
    }

    func remove(_ presenter: any FilePresenter) {
        let id = ObjectIdentifier(presenter)
        lock.withLock {
            guard let entry = entries.removeValue(forKey: id) else { return }
            closeFD(entry.pathFD)
            syncWatches()
        }
    }

    /// The live presenters, in registration order.
    var presenters: [any FilePresenter] {
        lock.withLock {
            pruneDeallocated()
            return entries.values.sorted { $0.order < $1.order }.compactMap(\.presenter)
        }
    }

    /// The live presenters with their items' canonical paths, as the presenters report them now (a presenter that
    /// changed its URL by itself is re-recorded and re-watched).
    func registered(excluding excluded: ObjectIdentifier?) -> [Registered] {
        reports.lock()
        defer { reports.unlock() }
        let live = lock.withLock {
            pruneDeallocated()
            return entries.values.sorted { $0.order < $1.order }.compactMap(\.presenter)
        }
        var result: [Registered] = []
        var changed: [(ObjectIdentifier, String?)] = []
        for presenter in live where ObjectIdentifier(presenter) != excluded {
            let path = Self.canonicalPath(of: presenter)
            if let path { result.append(Registered(presenter: presenter, path: path)) }
            changed.append((ObjectIdentifier(presenter), path))
        }
        lock.withLock {
            var moved = false
            for (id, path) in changed where entries[id] != nil && entries[id]?.reportedPath != path {
                entries[id]?.reportedPath = path
                guard entries[id]?.path != path else { continue }
                setPath(path, of: id)
                moved = true
            }
            if moved { syncWatches() }
        }
        return result
    }

    // MARK: Coordinated writes of this process

    /// Marks `keys` as being written by a coordination of this process.
    func beginWrite(_ keys: [String]) {
        lock.withLock { for key in keys { activeWrites[key, default: 0] += 1 } }
    }

    /// What a finished coordinated write tells the registry: presenters to re-record (their item changed),
    /// subitems to record for folder presenters, and presenters whose items moved.
    struct WriteOutcome {
        var refreshed: Set<ObjectIdentifier> = []
        var subitems: [(ObjectIdentifier, String)] = []
        var moves: [(ObjectIdentifier, String)] = []
    }

    /// Records `outcome` and ends the write of `keys`.
    func endWrite(_ keys: [String], outcome: WriteOutcome) {
        lock.withLock {
            for (id, newPath) in outcome.moves where entries[id] != nil { setPath(newPath, of: id) }
            for id in outcome.refreshed where entries[id] != nil {
                if let path = entries[id]?.path { setPath(path, of: id) }
            }
            for (id, subitem) in outcome.subitems where entries[id] != nil {
                recordSubitem(subitem, identity: FileIdentity.ofPresentedItem(atPath: subitem), of: id)
            }
            for key in keys {
                activeWrites[key, default: 1] -= 1
                if activeWrites[key] == 0 { activeWrites[key] = nil }
            }
            // Watches change only when an item moved, or a presented directory may have gained subfolders; a file
            // rewritten in place of itself (every safe save) keeps its folder's watch.
            let directoryRefreshed = outcome.refreshed.contains { entries[$0]?.identity?.isDirectory == true }
            if !outcome.moves.isEmpty || directoryRefreshed { syncWatches() }
        }
    }

    // MARK: Records (lock held)

    func setPath(_ path: String?, of id: ObjectIdentifier) {
        guard var entry = entries[id] else { return }
        let identity = path.flatMap { FileIdentity.ofPresentedItem(atPath: $0) }
        if entry.path != path || entry.identity?.inode != identity?.inode
            || entry.identity?.device
                != identity?.device
            || entry.pathFD < 0
        {
            closeLater(entry.pathFD)
            entry.pathFD = path.map { open($0, LinuxSystem.openPathOnly | O_CLOEXEC | O_NOFOLLOW) } ?? -1
        }
        if entry.path != path { entry.subitems = [:] }
        entry.path = path
        entry.identity = identity
        entries[id] = entry
    }

    func recordSubitem(_ subitem: String, identity: FileIdentity?, of id: ObjectIdentifier) {
        if entries[id]?.subitems.count ?? 0 > 10_000 { entries[id]?.subitems = [:] }
        entries[id]?.subitems[subitem] = .some(identity)
    }

    func pruneDeallocated() {
        for (id, entry) in entries where entry.presenter == nil {
            closeFD(entry.pathFD)
            entries[id] = nil
        }
    }

    func closeFD(_ fd: Int32) {
        if fd >= 0 { close(fd) }
    }

    /// Closes a handle on an item that a safe save has just replaced, off the saving thread: the handle is the
    /// replaced file's last reference, and closing it frees the file's blocks, which the save need not wait for.
    func closeLater(_ fd: Int32) {
        guard fd >= 0 else { return }
        Self.closingQueue.async { _ = close(fd) }
    }

    private static let closingQueue = DispatchQueue(label: "DocumentKit.FilePresenterRegistry.closing", qos: .utility)

    func isBeingWritten(_ path: String) -> Bool {
        activeWrites.keys.contains { key in
            key == path || CoordinationPath.isAncestor(key, of: path) || CoordinationPath.isAncestor(path, of: key)
        }
    }

    // MARK: Watching

    /// Watches the parent directory of every presented item, and every directory item with all its subdirectories.
    func syncWatches() {
        guard let watcher else { return }
        var desired = Set<String>()
        for entry in entries.values where entry.presenter != nil {
            guard let path = entry.path else { continue }
            desired.insert(CoordinationPath.parent(of: path))
            if entry.identity?.isDirectory == true {
                desired.insert(path)
                let enumerator = FileManager.default.enumerator(atPath: path)
                while let subpath = enumerator?.nextObject() as? String {
                    if (enumerator?.fileAttributes?[.type] as? FileAttributeType) == .typeDirectory {
                        desired.insert(path + "/" + subpath)
                    }
                }
            }
        }
        for (path, wd) in watchByPath where !desired.contains(path) {
            watchByPath[path] = nil
            if pathByWatch[wd] == path {
                pathByWatch[wd] = nil
                watcher.remove(wd)
            }
        }
        for path in desired where watchByPath[path] == nil {
            guard let wd = watcher.add(path) else { continue }
            watchByPath[path] = wd
            pathByWatch[wd] = path
        }
    }
}

extension FilePresenterRegistry {
    /// The canonical path of a presenter's item, or `nil` when it has none.
    static func canonicalPath(of presenter: any FilePresenter) -> String? {
        guard let url = presenter.presentedItemURL else { return nil }
        return try? CoordinationPath.canonical(url)
    }
}
