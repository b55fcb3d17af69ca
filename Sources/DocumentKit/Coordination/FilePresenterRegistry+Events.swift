import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Turning file-system events (from any process) into presenter messages.
extension FilePresenterRegistry {
    /// A message for one presenter, to run on its queue.
    struct Notice: Sendable {
        var presenter: any FilePresenter
        var deliver: @Sendable () -> Void
    }

    /// Reconciles every presenter an event batch may concern with what is on disk now, and messages those whose item
    /// changed, moved or disappeared, or whose directory gained, changed or lost subitems.
    func handle(_ events: [FileSystemWatcher.Event]) {
        let notices = lock.withLock { reconcile(events) }
        for notice in notices {
            notice.presenter.presentedItemOperationQueue.addOperation(notice.deliver)
        }
    }

    private struct SubitemEvent {
        var mask: UInt32 = 0
        var cookie: UInt32 = 0
    }

    /// Lock held.
    private func reconcile(_ events: [FileSystemWatcher.Event]) -> [Notice] {
        pruneDeallocated()
        var items = Set<ObjectIdentifier>()
        var subitems: [ObjectIdentifier: [String: SubitemEvent]] = [:]
        var movedFrom: [UInt32: String] = [:]
        var movedTo = Set<UInt32>()
        var watchesChanged = false
        let all = events.contains { $0.mask & UInt32(IN_Q_OVERFLOW) != 0 }
        for event in events {
            if event.mask & UInt32(IN_IGNORED) != 0 {
                if let path = pathByWatch.removeValue(forKey: event.watch) { watchByPath[path] = nil }
                watchesChanged = true
                continue
            }
            guard let directory = pathByWatch[event.watch] else { continue }
            let path = event.name.isEmpty ? directory : CoordinationPath.appending(event.name, to: directory)
            if event.mask & UInt32(IN_ISDIR) != 0 { watchesChanged = true }
            if event.mask & UInt32(IN_MOVED_FROM) != 0 { movedFrom[event.cookie] = path }
            if event.mask & UInt32(IN_MOVED_TO) != 0 { movedTo.insert(event.cookie) }
            for (id, entry) in entries {
                guard let item = entry.path, !isBeingWritten(item) else { continue }
                if path == item || CoordinationPath.isAncestor(path, of: item) {
                    items.insert(id)
                } else if CoordinationPath.isAncestor(item, of: path) {
                    if entry.identity?.members != 0 || isPackagePath(item) {
                        items.insert(id)
                    } else if !event.name.isEmpty {
                        subitems[id, default: [:]][path, default: SubitemEvent()].mask |= event.mask
                        subitems[id, default: [:]][path, default: SubitemEvent()].cookie = event.cookie
                    }
                }
            }
        }
        if all {
            for (id, entry) in entries where entry.path.map({ !isBeingWritten($0) }) ?? false { items.insert(id) }
        }
        var notices: [Notice] = []
        for id in items.sorted(by: { entries[$0]!.order < entries[$1]!.order }) {
            if let notice = reconcileItem(id) {
                notices.append(notice)
                watchesChanged = true
            }
        }
        for (id, events) in subitems {
            for (path, event) in events.sorted(by: { $0.key < $1.key }) {
                notices += reconcileSubitem(path, event, of: id, movedFrom: movedFrom, movedTo: movedTo)
            }
        }
        if watchesChanged { syncWatches() }
        return notices
    }

    /// Compares the item of `id` with its record; lock held.
    private func reconcileItem(_ id: ObjectIdentifier) -> Notice? {
        guard let entry = entries[id], let presenter = entry.presenter, let path = entry.path else { return nil }
        if let now = FileIdentity.ofPresentedItem(atPath: path) {
            guard now != entry.identity else { return nil }
            setPath(path, of: id)
            return Notice(presenter: presenter) { presenter.presentedItemDidChange() }
        }
        guard entry.identity != nil else { return nil }
        if let target = Self.currentPath(of: entry.pathFD), target != path {
            if Self.isTemporarySibling(target, of: path) {
                // Another process's safe save on a file system without RENAME_EXCHANGE moved the old item aside
                // and is about to rename the new one in, then delete the old: not a move to follow. If the new
                // item is already there, it is a change; if not, its rename (or, should the old item vanish with
                // nothing in its place, the deletion) comes with a later batch. The record stays as it is.
                guard let now = FileIdentity.ofPresentedItem(atPath: path), now != entry.identity else { return nil }
                setPath(path, of: id)
                return Notice(presenter: presenter) { presenter.presentedItemDidChange() }
            }
            setPath(target, of: id)
            let isDirectory = entries[id]?.identity?.isDirectory ?? false
            let url = URL(fileURLWithPath: target, isDirectory: isDirectory)
            return Notice(presenter: presenter) { presenter.presentedItemDidMove(to: url) }
        }
        setPath(path, of: id)
        return Notice(presenter: presenter) { presenter.accommodatePresentedItemDeletion { _ in } }
    }

    /// Compares a subitem of the folder presented by `id` with what the presenter was last told; lock held.
    private func reconcileSubitem(
        _ path: String,
        _ event: SubitemEvent,
        of id: ObjectIdentifier,
        movedFrom: [UInt32: String],
        movedTo: Set<UInt32>
    ) -> [Notice] {
        guard let presenter = entries[id]?.presenter else { return [] }
        // A save's temporary file (`.name.hex.tmp`, Foundation's `.UUID.tmp`, an editor's) is not news: what the
        // folder's presenter hears of is the item it becomes when it is renamed into place.
        if Self.isSafeSaveTemporary(path) { return [] }
        let known = entries[id]?.subitems[path]
        let url = URL(fileURLWithPath: path)
        if let now = FileIdentity.ofPresentedItem(atPath: path) {
            if known == .some(now) { return [] }
            entries[id]?.subitems[path] = .some(now)
            // A rename from an item the presenter knows is a move; from one it never heard of (the temporary file
            // of a safe save) it is the destination appearing or changing.
            if event.mask & UInt32(IN_MOVED_TO) != 0, let source = movedFrom[event.cookie], source != path,
                let item = entries[id]?.path, CoordinationPath.isAncestor(item, of: source),
                case .some(.some) = entries[id]?.subitems[source]
            {
                entries[id]?.subitems[source] = .some(nil)
                let sourceURL = URL(fileURLWithPath: source)
                return [Notice(presenter: presenter) { presenter.presentedSubitem(at: sourceURL, didMoveTo: url) }]
            }
            let wasKnown: Bool = if case .some(.some) = known { true } else { false }
            let appeared = !wasKnown && event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0
            if appeared {
                return [Notice(presenter: presenter) { presenter.presentedSubitemDidAppear(at: url) }]
            }
            return [Notice(presenter: presenter) { presenter.presentedSubitemDidChange(at: url) }]
        }
        if known == .some(nil) { return [] }
        entries[id]?.subitems[path] = .some(nil)
        if event.mask & UInt32(IN_MOVED_FROM) != 0, movedTo.contains(event.cookie) { return [] }
        return [Notice(presenter: presenter) { presenter.accommodatePresentedSubitemDeletion(at: url) { _ in } }]
    }

    private func isPackagePath(_ path: String) -> Bool {
        DocumentTypeRegistry.default.isPackageExtension((path as NSString).pathExtension)
    }

    /// Whether `path` is named like a save's temporary file (``TemporaryFileName``).
    static func isSafeSaveTemporary(_ path: String) -> Bool {
        TemporaryFileName.isTemporary((path as NSString).lastPathComponent)
    }

    /// Whether `candidate` is named like a temporary sibling of `path` made by a safe save — `.<name>.<hex>.tmp` in
    /// the same directory, as `SafeFileWriter.temporarySibling(of:)` names it — where a save by another process
    /// moves the old item aside before moving the new one in.
    static func isTemporarySibling(_ candidate: String, of path: String) -> Bool {
        guard CoordinationPath.parent(of: candidate) == CoordinationPath.parent(of: path) else { return false }
        let prefix = ".\((path as NSString).lastPathComponent.prefix(180))."
        let name = (candidate as NSString).lastPathComponent
        guard name.hasPrefix(prefix), name.hasSuffix(".tmp") else { return false }
        let hex = name.dropFirst(prefix.count).dropLast(4)
        return !hex.isEmpty && hex.allSatisfy(\.isHexDigit)
    }

    /// Where the item open as `fd` is now, or `nil` when it was deleted.
    static func currentPath(of fd: Int32) -> String? {
        guard fd >= 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return target.hasSuffix(" (deleted)") ? nil : target
    }
}
