import UbiquityProtocol

/// What the engine knows of one item, as three observations and the requests apps made — never as work to do. The
/// ``SyncPlanner`` works out the work from these each time; the executor's outcomes and the observers (the scan and
/// file-system events, the service's feed) change them.
///
/// - ``remote``: the service's record as last heard.
/// - ``local``: what is on disk as last observed.
/// - ``synced``: the merge base — the state both sides last agreed on; what a local edit is based on, and what a
///   local copy must still be for the engine to replace or remove it.
public struct ItemObservation: Hashable, Sendable, Codable {
    /// The item's id (made on this device for an item first seen here).
    public var id: ItemID
    /// The service's record, as last heard; `nil` while the service has not heard of the item.
    public var remote: RemoteView?
    /// What is on disk, as last observed; `nil` when nothing is there.
    public var local: LocalView?
    /// The state both sides last agreed on; `nil` before they first did.
    public var synced: SyncedView?
    /// What apps asked for.
    public var requests: ItemRequests

    /// Creates an observation.
    public init(
        id: ItemID, remote: RemoteView? = nil, local: LocalView? = nil, synced: SyncedView? = nil,
        requests: ItemRequests = []
    ) {
        self.id = id
        self.remote = remote
        self.local = local
        self.synced = synced
        self.requests = requests
    }

    /// Whether both sides agree and nothing is asked for: the same path and version on the service and here, and
    /// the local copy (when there is one) still the synced content.
    public var isInStep: Bool {
        SyncPlanner.decide(self, context: .empty, configuration: .init()) == nil
    }
}

/// The service's record of an item, as the engine last heard it.
public struct RemoteView: Hashable, Sendable, Codable {
    /// Where it is.
    public var path: ItemPath
    /// File, package or directory.
    public var kind: ItemKind
    /// The current version (`nil` before its first content, and for a directory).
    public var version: VersionID?
    /// The current version's content hash.
    public var contentHash: ChunkHash?
    /// The current version's length in bytes.
    public var size: Int64
    /// Whether the item was deleted.
    public var isDeleted: Bool

    /// Creates a view.
    public init(
        path: ItemPath, kind: ItemKind, version: VersionID? = nil, contentHash: ChunkHash? = nil, size: Int64 = 0,
        isDeleted: Bool = false
    ) {
        self.path = path
        self.kind = kind
        self.version = version
        self.contentHash = contentHash
        self.size = size
        self.isDeleted = isDeleted
    }
}

/// What was last observed on disk of an item.
public struct LocalView: Hashable, Sendable, Codable {
    /// Where it is.
    public var path: ItemPath
    /// File, package or directory.
    public var kind: ItemKind
    /// Its identity when observed.
    public var identity: LocalFileIdentity
    /// Its content hash, when read since `identity` was taken (`nil`: not read).
    public var contentHash: ChunkHash?

    /// Creates a view.
    public init(path: ItemPath, kind: ItemKind, identity: LocalFileIdentity, contentHash: ChunkHash? = nil) {
        self.path = path
        self.kind = kind
        self.identity = identity
        self.contentHash = contentHash
    }
}

/// The state both sides last agreed on.
public struct SyncedView: Hashable, Sendable, Codable {
    /// Where it was.
    public var path: ItemPath
    /// File, package or directory.
    public var kind: ItemKind
    /// The version both had (`nil` for a directory, or an item created here whose content has not gone up).
    public var version: VersionID?
    /// That version's content hash.
    public var contentHash: ChunkHash?
    /// That version's length in bytes.
    public var size: Int64
    /// The identity of the local copy when it held that version; `nil`: a placeholder (the content is not here).
    public var identity: LocalFileIdentity?

    /// Creates a view.
    public init(
        path: ItemPath, kind: ItemKind, version: VersionID? = nil, contentHash: ChunkHash? = nil, size: Int64 = 0,
        identity: LocalFileIdentity? = nil
    ) {
        self.path = path
        self.kind = kind
        self.version = version
        self.contentHash = contentHash
        self.size = size
        self.identity = identity
    }
}

/// What apps asked of an item, kept until done.
public struct ItemRequests: OptionSet, Hashable, Sendable, Codable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Download the content (an app opened it, or `startDownloading`).
    public static let download = ItemRequests(rawValue: 1 << 0)
    /// Drop the local content, keeping a placeholder.
    public static let evict = ItemRequests(rawValue: 1 << 1)
    /// Evicted on request: not downloaded again by the eager policy, only when asked.
    public static let keepEvicted = ItemRequests(rawValue: 1 << 2)
    /// Created on the service by this device, its first content not gone up yet: if the local copy goes first, the
    /// empty record goes too (else it would hold the path on every device with nothing in it).
    public static let firstUpload = ItemRequests(rawValue: 1 << 3)
}
