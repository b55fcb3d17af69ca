/// An item in a container as the server knows it: a stable id, where it is, what it is, and which version is
/// current.
///
/// A rename or move changes ``path`` and keeps ``id``. A deleted item stays as a tombstone with
/// ``isDeleted`` set, so devices that were offline learn of the deletion.
public struct ItemRecord: Hashable, Sendable, Codable {
    /// The item's stable identity.
    public var id: ItemID
    /// Where the item is in its container.
    public var path: ItemPath
    /// File, package or directory.
    public var kind: ItemKind
    /// The current version (the winner of ``VersionRecord/winner(among:)``); `nil` for a directory, or a file
    /// whose first version has not been committed.
    public var currentVersion: VersionID?
    /// Whether the item has been deleted (a tombstone).
    public var isDeleted: Bool

    /// Creates a record.
    public init(id: ItemID, path: ItemPath, kind: ItemKind, currentVersion: VersionID? = nil, isDeleted: Bool = false) {
        self.id = id
        self.path = path
        self.kind = kind
        self.currentVersion = currentVersion
        self.isDeleted = isDeleted
    }
}
