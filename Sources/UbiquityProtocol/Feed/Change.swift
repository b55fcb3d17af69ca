/// One entry in a container's change feed.
///
/// On the wire each change is an object tagged by `type`, with the fields its case names:
/// `{"type": "itemMoved", "itemID": "…", "from": "Documents/a", "to": "Documents/b"}`.
public enum Change: Hashable, Sendable {
    /// An item was created at `path`.
    case itemCreated(itemID: ItemID, path: ItemPath, kind: ItemKind)
    /// An item's current version became `currentVersion` (a new winning upload, or a resolution by replacing).
    case itemChanged(itemID: ItemID, currentVersion: VersionID)
    /// An item was renamed or moved; its id and content are unchanged.
    case itemMoved(itemID: ItemID, from: ItemPath, to: ItemPath)
    /// An item was deleted (it is now a tombstone).
    case itemDeleted(itemID: ItemID)
    /// A version of an item was committed (current or conflict; fetch the ``VersionRecord`` to know which).
    case versionAdded(itemID: ItemID, versionID: VersionID)
    /// A conflict version was marked resolved.
    case versionResolved(itemID: ItemID, versionID: VersionID)
    /// A version was removed.
    case versionRemoved(itemID: ItemID, versionID: VersionID)

    /// The item the change is about.
    public var itemID: ItemID {
        switch self {
        case .itemCreated(let id, _, _), .itemChanged(let id, _), .itemMoved(let id, _, _), .itemDeleted(let id),
            .versionAdded(let id, _), .versionResolved(let id, _), .versionRemoved(let id, _):
            id
        }
    }
}
