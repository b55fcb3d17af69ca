import UbiquityProtocol

/// One step of work the ``SyncPlanner`` asks for. Each names its item and what it expects to find, so the executor
/// can refuse (compare-and-swap) when the world moved on since the plan: a local file is touched only inside a
/// coordinated write that checks it is still `expecting`.
public enum SyncOperation: Hashable, Sendable {
    /// Read the local content's hash (the identity alone cannot tell: it is racy, or both sides have content and
    /// only their bytes say whether they are the same).
    case hashLocal(ItemID, expecting: LocalFileIdentity)
    /// Create the item's record on the service (an item first seen here).
    case createRemote(ItemID, path: ItemPath, kind: ItemKind)
    /// Upload the local content as a new version based on `basedOn` (the service keeps it as a conflict version when
    /// that is not current any more).
    case uploadContent(ItemID, basedOn: VersionID?, expecting: LocalFileIdentity)
    /// Move the service's record to where the local copy went.
    case moveRemote(ItemID, to: ItemPath)
    /// Delete the item on the service, based on the version last in step (refused when it is stale).
    case deleteRemote(ItemID, basedOn: VersionID?)
    /// Both sides moved the item to the same path: agree on it (nothing to move).
    case agreePath(ItemID, ItemPath)
    /// Agree on the service's record without its content: the item is a placeholder here.
    case recordPlaceholder(ItemID, RemoteView)
    /// Fetch `version` and put it in place at `path`, where the local copy must still be `replacing` (`nil`: nothing).
    case download(ItemID, version: VersionID, path: ItemPath, replacing: LocalFileIdentity?)
    /// Make the folder the service has at `path`, where nothing is here.
    case makeFolder(ItemID, path: ItemPath)
    /// Both sides hold the same content: agree on the service's record with the local copy as it is.
    case adoptLocal(ItemID, remote: RemoteView, identity: LocalFileIdentity)
    /// The local copy of an item never agreed on is its earlier version `version`: agree on that version with the
    /// local copy as it is (the service's newer one then comes down over it).
    case adoptEarlier(ItemID, version: VersionID, contentHash: ChunkHash, identity: LocalFileIdentity)
    /// Move the local copy to the service's path.
    case moveLocal(ItemID, from: ItemPath, to: ItemPath, expecting: LocalFileIdentity)
    /// Remove the local copy of an item deleted on the service, if it is still `expecting`.
    case deleteLocal(ItemID, path: ItemPath, expecting: LocalFileIdentity)
    /// Drop the local content (it is on the service), keeping a placeholder.
    case evict(ItemID, path: ItemPath, expecting: LocalFileIdentity)
    /// Rename a local file that collides with another item on the service to "Name (conflicted copy).ext": it syncs
    /// as an item of its own.
    case moveAside(ItemID, path: ItemPath, expecting: LocalFileIdentity)
    /// Let the local copy go from this item: the next scan finds it as an item of its own.
    case detachLocal(ItemID)
    /// Drop the records of an item that is gone on both sides.
    case forget(ItemID)

    /// The item the operation is about.
    public var itemID: ItemID {
        switch self {
        case .hashLocal(let id, _), .createRemote(let id, _, _), .uploadContent(let id, _, _), .moveRemote(let id, _),
            .agreePath(let id, _), .deleteRemote(let id, _), .recordPlaceholder(let id, _), .download(let id, _, _, _),
            .makeFolder(let id, _), .adoptLocal(let id, _, _), .adoptEarlier(let id, _, _, _),
            .moveLocal(let id, _, _, _), .deleteLocal(let id, _, _), .evict(let id, _, _), .moveAside(let id, _, _),
            .detachLocal(let id), .forget(let id):
            id
        }
    }
}
