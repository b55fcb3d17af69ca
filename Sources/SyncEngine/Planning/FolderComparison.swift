import UbiquityProtocol

/// ``LocalObservation/apply(_:to:newID:)`` a folder at a time: the start-up comparison of a whole container with
/// its records without holding either whole. Its answer is the same as the whole comparison's.
///
/// Each folder's records are compared with the folder's entries (``compare(_:with:)``, rule 1: an item and the file
/// at its path). What a folder leaves unexplained is carried to the end — the items found missing from where they
/// were, the entries no item claimed — so memory grows with the largest folder and with what changed, not with the
/// container. An entry no record at all could claim at the end (no item was that file, the service has no item
/// at its path) is made a new item at once (``createNow(_:newID:)``) rather than carried: at a first start that
/// is every file. Once every folder was compared, and the records of folders no longer on disk with none of their
/// entries, ``finish(remoteOwners:)`` applies rules 2–4 to what was carried: moves matched by file identity across
/// folders, a file where the service has an item with nothing here, and new items.
public struct FolderComparison: Sendable {
    /// An item whose file was not at its path: what rules 2 and 3 need of it.
    struct Missing: Sendable {
        let id: ItemID
        /// The file it was (device and inode) and its kind, if known.
        let file: LocalObservation.FileKey?
        /// Its local view before, for the content hash of a moved file that did not change.
        let previous: LocalView?
        /// Where the service has it, when it was never agreed on: a file found there is its (rule 3).
        let remoteOnlyPath: ItemPath?
    }

    /// The items found missing so far.
    private var missing: [Missing] = []
    /// The entries no item claimed so far, by path.
    private(set) var unclaimed: [ItemPath: ScannedItem] = [:]
    /// The entries of the folder compared last that no item of it claimed (each also in `unclaimed`).
    public private(set) var leftInFolder: [ScannedItem] = []

    /// A new comparison.
    public init() {}

    /// Compares the records of the items whose path is an entry of one folder (`items`: their observations) with
    /// that folder's entries (`entries`).
    /// - Returns: The items whose local copy is where it was, with their new local views; only those that changed.
    public mutating func compare(_ items: [ItemObservation], with entries: [ScannedItem]) -> [ItemObservation] {
        // Two names on disk that are one path (Unicode forms): the later one, as a scan of the whole container keeps.
        var entriesByPath = Dictionary(entries.map { ($0.path, $0) }) { _, later in later }
        var changed: [ItemObservation] = []
        for item in items.sorted(by: { $0.id.string < $1.id.string }) {
            guard let path = item.local?.path ?? LocalObservation.expectedPath(of: item) else { continue }
            if let found = entriesByPath[path], found.kind == (item.local?.kind ?? item.synced?.kind) {
                entriesByPath[path] = nil
                var updated = item
                updated.local = LocalObservation.observed(found, previous: item.local)
                if updated != item { changed.append(updated) }
            } else {
                let known = item.local?.identity ?? item.synced?.identity
                let kind = item.local?.kind ?? item.synced?.kind
                var remoteOnlyPath: ItemPath?
                if item.synced == nil, let remote = item.remote, !remote.isDeleted { remoteOnlyPath = remote.path }
                missing.append(
                    Missing(
                        id: item.id, file: known.flatMap { known in kind.map { LocalObservation.FileKey(known, $0) } },
                        previous: item.local, remoteOnlyPath: remoteOnlyPath))
            }
        }
        leftInFolder = entriesByPath.values.sorted { $0.path < $1.path }
        for (path, entry) in entriesByPath { unclaimed[path] = entry }
        return changed
    }

    /// New items (rule 4) of the unclaimed entries at `paths`, made before the end: only for entries that no item
    /// can claim there — none was the same file (rule 2), the service has none at the path (rule 3) — which the
    /// caller knows from all the records, not only those compared so far. Ids are drawn in the order of `paths`.
    public mutating func createNow(_ paths: [ItemPath], newID: () -> ItemID) -> [ItemObservation] {
        paths.compactMap { path in
            guard let found = unclaimed.removeValue(forKey: path) else { return nil }
            return ItemObservation(
                id: newID(), local: LocalView(path: found.path, kind: found.kind, identity: found.identity))
        }
    }

    /// What the end of the comparison decided of the items known: those found missing, with their new local
    /// views (a moved file's, or `nil`: nothing here), and those the service has at a path where a file was found.
    /// The new items follow from ``nextCreated(_:newID:)``.
    public struct Outcome: Sendable {
        public var localViews: [(id: ItemID, local: LocalView?)]
    }

    /// The entries no item claimed, in the order of their paths, that become new items; `created` of them did.
    private var left: [ItemPath] = []
    private var created = 0

    /// The local views rule 2 gave the missing items, once ``matchMoves()`` ran.
    private var views: [(id: ItemID, local: LocalView?)]?

    /// Rule 2, once every folder was compared: each missing item, in the order of their ids, takes the unclaimed
    /// entry that is its file (it moved), or has nothing here.
    public mutating func matchMoves() {
        guard views == nil else { return }
        // Only the entries that may be a missing item's file are indexed: at a first start every file is unclaimed
        // and nothing is missing, and an index of them all was a few megabytes at the peak of the comparison.
        let wanted = Set(missing.compactMap(\.file))
        var byFile: [LocalObservation.FileKey: ItemPath] = [:]
        if !wanted.isEmpty {
            for (path, found) in unclaimed {
                let key = LocalObservation.FileKey(found.identity, found.kind)
                if wanted.contains(key) { byFile[key] = path }
            }
        }
        var views: [(id: ItemID, local: LocalView?)] = []
        for item in missing.sorted(by: { $0.id.string < $1.id.string }) {
            if let file = item.file, let path = byFile[file], let found = unclaimed[path] {
                unclaimed[path] = nil
                byFile[file] = nil
                views.append((item.id, LocalObservation.observed(found, previous: item.previous)))
            } else {
                views.append((item.id, nil))
            }
        }
        self.views = views
    }

    /// The paths of the entries no item claimed after ``matchMoves()``: where rule 3 asks whether the service has
    /// an item never agreed on with nothing here.
    public var pathsLeft: [ItemPath] { unclaimed.keys.sorted() }

    /// Rule 3 (after rule 2, run first if it was not): an unclaimed entry where the service has an item never
    /// agreed on with nothing here is that item's — `remoteOwners` names, by path, such items among those the
    /// folders did not find missing (the missing ones are known here). Every other entry is a new item (rule 4),
    /// made by ``nextCreated(_:newID:)`` a batch at a time.
    public mutating func finish(remoteOwners: [ItemPath: ItemID]) -> Outcome {
        matchMoves()
        var localViews = views ?? []
        guard !unclaimed.isEmpty else { return Outcome(localViews: localViews) }
        var owners = remoteOwners
        var ended: [ItemID: Int] = [:]
        for (index, view) in localViews.enumerated() where view.local == nil { ended[view.id] = index }
        for item in missing where ended[item.id] != nil {
            if let path = item.remoteOnlyPath, owners[path] == nil { owners[path] = item.id }
        }
        for path in unclaimed.keys.sorted() {
            guard let found = unclaimed[path] else { continue }
            guard let id = owners[path] else {
                left.append(path)
                continue
            }
            unclaimed[path] = nil
            let view = LocalView(path: found.path, kind: found.kind, identity: found.identity)
            if let index = ended[id] {
                localViews[index].local = view
            } else {
                localViews.append((id, view))
            }
        }
        return Outcome(localViews: localViews)
    }

    /// The next at most `limit` new items, after ``finish(remoteOwners:)``, in the order of their paths (their ids
    /// from `newID`); none once every unclaimed entry is an item.
    public mutating func nextCreated(_ limit: Int, newID: () -> ItemID) -> [ItemObservation] {
        var items: [ItemObservation] = []
        while created < left.count, items.count < limit {
            let path = left[created]
            created += 1
            guard let found = unclaimed.removeValue(forKey: path) else { continue }
            items.append(
                ItemObservation(
                    id: newID(), local: LocalView(path: found.path, kind: found.kind, identity: found.identity)))
        }
        return items
    }
}
