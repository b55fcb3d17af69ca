import UbiquityProtocol

/// A change made on this device, found by comparing a scan with the state database.
public enum LocalChange: Hashable, Sendable {
    /// A new item appeared at `path`.
    case created(path: ItemPath, kind: ItemKind)
    /// The content of a known item changed.
    case modified(itemID: ItemID)
    /// A known item is now at `to` (the same file: device and inode).
    case moved(itemID: ItemID, from: ItemPath, to: ItemPath)
    /// A known item is gone.
    case deleted(itemID: ItemID)

    /// The known item the change concerns (`nil` for a creation).
    public var itemID: ItemID? {
        switch self {
        case .created: nil
        case .modified(let id), .moved(let id, _, _), .deleted(let id): id
        }
    }
}

/// The pure comparison behind the start-up scan: what changed on disk since the state database was last in step.
///
/// - A known item whose path holds an item of the same kind with the recorded identity is unchanged; with
///   another identity, or a racy recorded one (``LocalFileIdentity/isRacy``: its content is checked), it is
///   ``LocalChange/modified(itemID:)`` (a folder's own times do not count). So is an item with no recorded identity
///   found on disk: never uploaded, or written where only a placeholder was.
/// - A known item missing from its path is ``LocalChange/moved(itemID:from:to:)`` when a new path holds the same
///   file (device and inode) — also ``LocalChange/modified(itemID:)`` if its size or modification time changed on
///   the way — and
///   ``LocalChange/deleted(itemID:)`` otherwise. A placeholder is expected to be missing.
/// - Anything else found is ``LocalChange/created(path:kind:)``.
///
/// The order frees paths before they are taken again: deletions (children first), then moves, then creations
/// (parents first), then content changes.
public enum LocalChangeDetector {
    /// The changes between `known` (the state database) and `scanned` (the disk).
    public static func changes(known: [LocalItem], scanned: [ItemPath: ScannedItem]) -> [LocalChange] {
        var unclaimed = scanned
        var missing: [LocalItem] = []
        var modified: [LocalChange] = []
        for item in known.sorted(by: { $0.path < $1.path }) {
            guard let found = scanned[item.path], found.kind == item.kind else {
                if !item.isPlaceholder { missing.append(item) }
                continue
            }
            unclaimed[item.path] = nil
            if item.kind != .directory, let identity = item.identity, identity != found.identity || identity.isRacy {
                modified.append(.modified(itemID: item.id))
            }
            // Never uploaded, or a file written where only a placeholder was: content to send.
            if item.kind != .directory, item.identity == nil {
                modified.append(.modified(itemID: item.id))
            }
        }
        var moves: [LocalChange] = []
        var deletions: [LocalChange] = []
        for item in missing {
            if let identity = item.identity,
                let target = unclaimed.values.sorted(by: { $0.path < $1.path }).first(where: {
                    $0.kind == item.kind && $0.identity.isSameFile(as: identity)
                })
            {
                unclaimed[target.path] = nil
                moves.append(.moved(itemID: item.id, from: item.path, to: target.path))
                // A rename changes the status-change time; only size or modification time say the content changed.
                if item.kind != .directory,
                    target.identity.size != identity.size || target.identity.modified != identity.modified
                {
                    modified.append(.modified(itemID: item.id))
                }
            } else {
                deletions.append(.deleted(itemID: item.id))
            }
        }
        let creations = unclaimed.values.sorted { $0.path < $1.path }.map {
            LocalChange.created(path: $0.path, kind: $0.kind)
        }
        let deletedPaths = Dictionary(uniqueKeysWithValues: missing.map { ($0.id, $0.path) })
        let orderedDeletions = deletions.sorted { left, right in
            guard case .deleted(let a) = left, case .deleted(let b) = right else { return false }
            return deletedPaths[b]! < deletedPaths[a]!
        }
        return orderedDeletions + moves + creations + modified
    }
}
