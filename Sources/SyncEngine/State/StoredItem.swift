import UbiquityProtocol

/// What the engine persists of one item: its three observations and the apps' requests (``ItemObservation``) — what
/// the planner works from — and the item as apps see it (``LocalItem``), whose own fields (the errors of the last
/// transfers, unresolved conflicts) are kept beside them and whose other fields follow from the observations.
public struct StoredItem: Hashable, Sendable {
    /// The observations the planner works from.
    public var observation: ItemObservation
    /// Why the last upload of the local copy failed, until one succeeds.
    public var uploadError: ItemError?
    /// Why the last download of the content failed, until one succeeds.
    public var downloadError: ItemError?
    /// Whether the service has conflict versions of the item not yet resolved.
    public var hasUnresolvedConflicts: Bool

    /// Creates a record.
    public init(
        _ observation: ItemObservation, uploadError: ItemError? = nil, downloadError: ItemError? = nil,
        hasUnresolvedConflicts: Bool = false
    ) {
        self.observation = observation
        self.uploadError = uploadError
        self.downloadError = downloadError
        self.hasUnresolvedConflicts = hasUnresolvedConflicts
    }

    /// The item's id.
    public var id: ItemID { observation.id }

    /// Where the item is, as apps see it: where its local copy is; else where both sides last agreed it was; else
    /// where the service has it.
    public var path: ItemPath {
        observation.local?.path ?? observation.synced?.path ?? observation.remote?.path ?? Self.nowhere
    }

    private static let nowhere = try! ItemPath("Documents")

    /// The item as apps see it.
    public var item: LocalItem {
        let o = observation
        let kind = o.local?.kind ?? o.synced?.kind ?? o.remote?.kind ?? .file
        var item = LocalItem(
            id: o.id, path: path, kind: kind, identity: o.synced?.identity, baseVersion: o.synced?.version,
            serverVersion: o.remote?.version, contentHash: o.synced?.contentHash,
            size: o.remote.map(\.size) ?? o.synced?.size ?? o.local?.identity.size ?? 0,
            isPlaceholder: kind != .directory && o.local == nil && o.synced?.identity == nil,
            hasUnresolvedConflicts: hasUnresolvedConflicts)
        item.uploadError = uploadError
        item.downloadError = downloadError
        return item
    }

    /// The record of an item kept as a ``LocalItem`` (by a version of the engine before the observations were kept,
    /// or by a tool filling a state database): the service's record, the synced state and the local copy as the
    /// item says they were. The next scan corrects the local view.
    public init(migrating item: LocalItem, currentContentHash: ChunkHash? = nil) {
        let remote = RemoteView(
            path: item.path, kind: item.kind, version: item.serverVersion,
            contentHash: item.serverVersion == item.baseVersion ? item.contentHash : currentContentHash,
            size: item.size)
        let identity = item.isPlaceholder ? nil : item.identity
        let synced = SyncedView(
            path: item.path, kind: item.kind, version: item.baseVersion, contentHash: item.contentHash,
            size: item.size, identity: identity)
        let local = identity.map {
            LocalView(
                path: item.path, kind: item.kind, identity: $0, contentHash: $0.isRacy ? nil : item.contentHash)
        }
        self.init(
            ItemObservation(id: item.id, remote: remote, local: local, synced: synced),
            uploadError: item.uploadError, downloadError: item.downloadError,
            hasUnresolvedConflicts: item.hasUnresolvedConflicts)
    }
}
