import UbiquityProtocol

/// What the engine knows of one item of its container: the service's record, and the local copy's state.
public struct LocalItem: Hashable, Sendable, Codable {
    /// The item's id on the service (made here for an item created on this device).
    public var id: ItemID
    /// Where it is in the container.
    public var path: ItemPath
    /// File, package or directory.
    public var kind: ItemKind
    /// The identity of the local copy when it was last in step with ``baseVersion``; `nil` while it is a
    /// placeholder or was never synced.
    public var identity: LocalFileIdentity?
    /// The version the local copy holds (what an upload of a local edit names as its base).
    public var baseVersion: VersionID?
    /// The item's current version on the service, as last heard.
    public var serverVersion: VersionID?
    /// The content hash of the local copy ``identity`` describes: ``baseVersion``'s, or that of a conflict version
    /// this device uploaded from it.
    public var contentHash: ChunkHash?
    /// The content's length in bytes, as last known.
    public var size: Int64
    /// Whether only the metadata is here (content not downloaded).
    public var isPlaceholder: Bool
    /// Whether the service has conflict versions of the item not yet resolved.
    public var hasUnresolvedConflicts: Bool
    /// Why the last upload of the local copy failed, until one succeeds.
    public var uploadError: ItemError?
    /// Why the last download of the item's content failed, until one succeeds.
    public var downloadError: ItemError?

    /// Creates a record.
    public init(
        id: ItemID, path: ItemPath, kind: ItemKind, identity: LocalFileIdentity? = nil, baseVersion: VersionID? = nil,
        serverVersion: VersionID? = nil, contentHash: ChunkHash? = nil, size: Int64 = 0, isPlaceholder: Bool = false,
        hasUnresolvedConflicts: Bool = false
    ) {
        self.id = id
        self.path = path
        self.kind = kind
        self.identity = identity
        self.baseVersion = baseVersion
        self.serverVersion = serverVersion
        self.contentHash = contentHash
        self.size = size
        self.isPlaceholder = isPlaceholder
        self.hasUnresolvedConflicts = hasUnresolvedConflicts
    }
}

/// Why an upload or download of one item failed: the service's error code when it gave one, and a sentence.
public struct ItemError: Hashable, Sendable, Codable, Error, CustomStringConvertible {
    /// The service's code, or ``ProtocolError/Code/internalError`` for a local failure (disk, network).
    public var code: ProtocolError.Code
    /// What went wrong.
    public var message: String

    /// Creates an error record.
    public init(code: ProtocolError.Code, message: String) {
        self.code = code
        self.message = message
    }

    /// The record of `error`.
    public init(_ error: any Error) {
        if let error = error as? ProtocolError {
            self.init(code: error.code, message: error.message)
        } else {
            self.init(code: .internalError, message: String(describing: error))
        }
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
