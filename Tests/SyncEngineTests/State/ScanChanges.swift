import SyncEngine
import UbiquityProtocol

/// What a scan changed in items' local observations, told as the changes a user made: created, deleted, moved,
/// modified (or, for a racy identity, to be read to tell).
enum ScanChange: Hashable, CustomStringConvertible {
    case created(ItemPath, ItemKind)
    case deleted(ItemID)
    case moved(ItemID, from: ItemPath, to: ItemPath)
    case modified(ItemID)

    var description: String {
        switch self {
        case .created(let path, let kind): "created \(path) (\(kind))"
        case .deleted(let id): "deleted \(id)"
        case .moved(let id, let from, let to): "moved \(id) from \(from) to \(to)"
        case .modified(let id): "modified \(id)"
        }
    }

    /// The changes `scanned` shows against `known` (each in step: its local copy as last synced), applied as the
    /// engine applies a scan (``LocalObservation``).
    static func changes(known: [LocalItem], scanned: [ItemPath: ScannedItem]) -> Set<ScanChange> {
        var items = Dictionary(known.map { ($0.id, StoredItem(migrating: $0).observation) }) { first, _ in first }
        let before = items
        LocalObservation.apply(scanned, to: &items, newID: { ItemID() })
        var changes = Set<ScanChange>()
        for (id, item) in items {
            guard let old = before[id] else {
                if let local = item.local { changes.insert(.created(local.path, local.kind)) }
                continue
            }
            guard let synced = old.synced, let recorded = synced.identity else { continue }
            guard let local = item.local else {
                changes.insert(.deleted(id))
                continue
            }
            if local.path != synced.path { changes.insert(.moved(id, from: synced.path, to: local.path)) }
            if local.kind != .directory, !local.identity.isUnchanged(since: recorded) || recorded.isRacy {
                changes.insert(.modified(id))
            }
        }
        return changes
    }
}
