import Foundation

/// One version of an item's content.
///
/// Every upload names the version it was ``basedOn``; when that is not the item's current version, the upload
/// is kept as a conflict version (``isConflict``) until resolved. On the wire ``modificationDate`` is a
/// ``WireTimestamp`` (microsecond precision) and ``size`` is written too, and checked against the manifest on
/// decoding.
public struct VersionRecord: Hashable, Sendable {
    /// The version's identity.
    public var id: VersionID
    /// The item it is a version of.
    public var itemID: ItemID
    /// The chunks (or package tree) that make up the content.
    public var manifest: ContentManifest
    /// The SHA-256 of the whole content (for a package, of its canonical manifest as the sync engine defines it);
    /// equal hashes mean identical content, which is never a conflict.
    public var contentHash: ChunkHash
    /// When the content was last modified on the saving device.
    public var modificationDate: Date
    /// The device that saved it.
    public var savingDevice: SavingDevice
    /// The version this one was made from; `nil` for an item's first version.
    public var basedOn: VersionID?
    /// Whether this version lost a conflict (it was not based on the then current version).
    public var isConflict: Bool
    /// Whether a conflict version has been marked resolved.
    public var isResolved: Bool

    /// The content's length in bytes: ``ContentManifest/totalSize``.
    public var size: Int64 { manifest.totalSize }

    /// Creates a record.
    public init(
        id: VersionID, itemID: ItemID, manifest: ContentManifest, contentHash: ChunkHash, modificationDate: Date,
        savingDevice: SavingDevice, basedOn: VersionID? = nil, isConflict: Bool = false, isResolved: Bool = false
    ) {
        self.id = id
        self.itemID = itemID
        self.manifest = manifest
        self.contentHash = contentHash
        self.modificationDate = modificationDate
        self.savingDevice = savingDevice
        self.basedOn = basedOn
        self.isConflict = isConflict
        self.isResolved = isResolved
    }
}
