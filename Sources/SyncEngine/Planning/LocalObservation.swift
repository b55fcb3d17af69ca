import UbiquityProtocol

/// Turns a scan of the container into the items' local observations: the pure successor of comparing a scan with
/// the state database. Which item a file on disk belongs to:
/// 1. the item last seen at its path (or, not seen here, last synced there — a placeholder's path too), with the
///    same kind;
/// 2. else an item whose file went missing and that was the same file (device and inode, and not born since the
///    item's file was last seen: a file system gives a freed inode number out again): it moved;
/// 3. else an item the service has at that path that has nothing here yet (both sides made it);
/// 4. else a new item (id from `newID`).
///
/// A file still the one last observed (``LocalFileIdentity/isUnchanged(since:)``) keeps its known content hash.
public enum LocalObservation {
    /// Applies a scan of the whole container to `items`.
    public static func apply(
        _ scanned: [ItemPath: ScannedItem], to items: inout [ItemID: ItemObservation], newID: () -> ItemID
    ) {
        var unclaimed = scanned
        var missing: [ItemID] = []
        for id in items.keys.sorted(by: { $0.string < $1.string }) {
            guard let item = items[id] else { continue }
            guard let path = item.local?.path ?? expectedPath(of: item) else { continue }
            if let found = unclaimed[path], found.kind == (item.local?.kind ?? item.synced?.kind) {
                unclaimed[path] = nil
                items[id]?.local = observed(found, previous: item.local)
            } else {
                missing.append(id)
            }
        }
        // Moves: the same file at a path nobody claimed.
        var byFile: [FileKey: ItemPath] = [:]
        for (path, found) in unclaimed { byFile[FileKey(found.identity, found.kind)] = path }
        for id in missing {
            guard let item = items[id] else { continue }
            let known = item.local?.identity ?? item.synced?.identity
            if let known, let kind = item.local?.kind ?? item.synced?.kind,
                let path = byFile[FileKey(known, kind)], let found = unclaimed[path],
                found.identity.couldBeTheFileSeen(at: known.capturedAt)
            {
                unclaimed[path] = nil
                byFile[FileKey(known, kind)] = nil
                items[id]?.local = observed(found, previous: item.local)
            } else {
                items[id]?.local = nil
            }
        }
        guard !unclaimed.isEmpty else { return }
        // What the service has at a path with nothing here: a file found there is that item's.
        var remoteOnly: [ItemPath: ItemID] = [:]
        for (id, item) in items where item.local == nil && item.synced == nil {
            if let remote = item.remote, !remote.isDeleted { remoteOnly[remote.path] = id }
        }
        for path in unclaimed.keys.sorted() {
            guard let found = unclaimed[path] else { continue }
            let view = LocalView(path: found.path, kind: found.kind, identity: found.identity)
            if let id = remoteOnly[path] {
                items[id]?.local = view
            } else {
                let id = newID()
                items[id] = ItemObservation(id: id, local: view)
            }
        }
    }

    /// The new local item among `candidates` that is the item the service has just been heard to have at `path`:
    /// one of the same kind at that path that the service does not have yet and was never agreed on — the same item
    /// made on both sides (rule 3 when the service's record comes after the scan). Its local copy becomes that item's.
    public static func madeHereToo(path: ItemPath, kind: ItemKind, among candidates: [ItemObservation]) -> ItemID? {
        candidates.first { $0.remote == nil && $0.synced == nil && $0.local?.path == path && $0.local?.kind == kind }?
            .id
    }

    /// Where a file of an item with nothing here last observed would be: where it was when last in step; for a
    /// placeholder, where the service has it (a file written there is its new content).
    static func expectedPath(of item: ItemObservation) -> ItemPath? {
        guard let synced = item.synced else { return nil }
        if synced.identity != nil { return synced.path }
        guard let remote = item.remote, !remote.isDeleted, remote.path == synced.path else { return nil }
        return synced.path
    }

    /// The local view of `found`, keeping the content hash of an unchanged file.
    static func observed(_ found: ScannedItem, previous: LocalView?) -> LocalView {
        var view = LocalView(path: found.path, kind: found.kind, identity: found.identity)
        // A hash known for an identity that was no longer racy still holds: any later write changed the identity.
        if let previous, !previous.identity.isRacy, found.identity == previous.identity {
            view.contentHash = previous.contentHash
        }
        return view
    }

    struct FileKey: Hashable, Sendable {
        let device: UInt64
        let inode: UInt64
        let kind: ItemKind

        init(_ identity: LocalFileIdentity, _ kind: ItemKind) {
            device = identity.device
            inode = identity.inode
            self.kind = kind
        }
    }
}
