/// `POST /v1/containers/{container}/items`: a new item, optionally with its first version.
///
/// The device chooses the item's id, so a retried request is recognised: creating an item that exists with the
/// same path and kind is not an error.
public struct CreateItemRequest: Hashable, Sendable, Codable {
    /// The new item's id.
    public var id: ItemID
    /// Where it goes in the container.
    public var path: ItemPath
    /// File, package or directory.
    public var kind: ItemKind
    /// Its first version (never for a directory).
    public var version: VersionRecord?

    /// Creates a request.
    public init(id: ItemID = ItemID(), path: ItemPath, kind: ItemKind, version: VersionRecord? = nil) {
        self.id = id
        self.path = path
        self.kind = kind
        self.version = version
    }
}

/// `PATCH /v1/containers/{container}/items/{item}`: a rename or move (metadata only; no content is uploaded).
public struct MoveItemRequest: Hashable, Sendable, Codable {
    /// The item's new path.
    public var path: ItemPath

    /// Creates a request.
    public init(path: ItemPath) { self.path = path }
}

/// `POST /v1/containers/{container}/items/{item}/current`: make a chosen version current (resolution by replacing).
public struct ReplaceCurrentRequest: Hashable, Sendable, Codable {
    /// The version to make current.
    public var versionID: VersionID

    /// Creates a request.
    public init(versionID: VersionID) { self.versionID = versionID }
}

/// What a commit did with an uploaded version.
public enum CommitOutcome: String, Hashable, Sendable, Codable {
    /// The version is now the item's current version.
    case current
    /// The version was kept as a conflict version (its base was not the current version and it lost the rule).
    case conflict
    /// The same content was already there; nothing was added.
    case identical
}

/// The answer to every request that changes an item: the item as it now is and the feed position after the change.
public struct ItemResponse: Hashable, Sendable, Codable {
    /// The item after the change.
    public var item: ItemRecord
    /// For a commit: what happened to the uploaded version.
    public var outcome: CommitOutcome?
    /// For a commit: the version as stored (for ``CommitOutcome/identical``, the existing one).
    public var version: VersionRecord?
    /// The container's feed position after the change.
    public var token: ChangeToken

    /// Creates a response.
    public init(item: ItemRecord, outcome: CommitOutcome? = nil, version: VersionRecord? = nil, token: ChangeToken) {
        self.item = item
        self.outcome = outcome
        self.version = version
        self.token = token
    }
}

/// `GET /v1/containers/{container}/items`: every item (tombstones included) and the feed position they reflect,
/// from which a device follows the feed.
public struct ItemListResponse: Hashable, Sendable, Codable {
    /// The items, by path.
    public var items: [ItemRecord]
    /// The feed position the list reflects.
    public var token: ChangeToken

    /// Creates a response.
    public init(items: [ItemRecord], token: ChangeToken) {
        self.items = items
        self.token = token
    }
}

/// `GET /v1/containers/{container}/items/{item}`: an item and all its kept versions.
public struct ItemDetail: Hashable, Sendable, Codable {
    /// The item.
    public var item: ItemRecord
    /// Its kept versions (current, conflict and history), newest first.
    public var versions: [VersionRecord]

    /// Creates a detail.
    public init(item: ItemRecord, versions: [VersionRecord]) {
        self.item = item
        self.versions = versions
    }
}

/// `GET /v1/containers/{container}/items/{item}?have={version}`: an item and its kept versions, each version's
/// manifest as a delta against the version the device holds (``VersionPayload``) where that is shorter — a device
/// that holds one version of a large file reads the others in a few operations each.
public struct ItemDetailPayload: Hashable, Sendable, Codable {
    /// The item.
    public var item: ItemRecord
    /// Its kept versions, newest first.
    public var versions: [VersionPayload]

    /// `detail`, its manifests as deltas against `have` where shorter (whole without it).
    public init(_ detail: ItemDetail, have: VersionRecord?) {
        item = detail.item
        versions = detail.versions.map { VersionPayload($0, against: have) }
    }

    /// The detail with whole manifests, the deltas applied to `have`.
    /// - Throws: What ``VersionPayload/resolved(base:)`` throws: a delta against another version than `have`.
    public func resolved(have: VersionRecord?) throws(ProtocolError) -> ItemDetail {
        var records: [VersionRecord] = []
        for version in versions {
            records.append(try version.resolved { id in id == have?.id ? have?.manifest : nil })
        }
        return ItemDetail(item: item, versions: records)
    }
}

/// `POST /v1/containers/{container}/chunks/missing`: which of these chunks must be uploaded.
///
/// Sizes let the service refuse, before any chunk is sent, an upload that would exceed the account's quota.
public struct MissingChunksRequest: Hashable, Sendable, Codable {
    /// The chunks a version needs.
    public var chunks: [ChunkReference]

    /// Creates a request.
    public init(chunks: [ChunkReference]) { self.chunks = chunks }
}

/// The answer to ``MissingChunksRequest``.
public struct MissingChunksResponse: Hashable, Sendable, Codable {
    /// The hashes the account lacks, each once, in the order first asked.
    public var missing: [ChunkHash]

    /// Creates a response.
    public init(missing: [ChunkHash]) { self.missing = missing }
}

/// `POST /v1/containers/{container}/items/details`: the details of many items in one request — a device that hears
/// of a page of new items asks for them together, not one request each.
///
/// ```json
/// {"items": [{"id": "…"}, {"id": "…", "have": "…"}]}
/// ```
public struct ItemDetailsRequest: Hashable, Sendable, Codable {
    /// One item asked for, with the version of it the device holds (its manifests then travel as deltas, as with
    /// `GET …/items/{item}?have=`).
    public struct Entry: Hashable, Sendable, Codable {
        /// The item.
        public var id: ItemID
        /// A version of it the device holds.
        public var have: VersionID?

        /// Creates an entry.
        public init(id: ItemID, have: VersionID? = nil) {
            self.id = id
            self.have = have
        }
    }

    /// The most items one request may ask for.
    public static let maximumItems = 1_000

    /// The items, in any order; each is answered once.
    public var items: [Entry]

    /// Creates a request.
    public init(items: [Entry]) { self.items = items }

    /// Checks the request's size: at least one item, at most ``maximumItems``.
    /// - Throws: ``ProtocolError/Code/malformedRequest``.
    public func validate() throws(ProtocolError) {
        guard !items.isEmpty else { throw ProtocolError(.malformedRequest, "the request asks for no items") }
        guard items.count <= Self.maximumItems else {
            throw ProtocolError(
                .malformedRequest, "the request asks for \(items.count) items, more than \(Self.maximumItems)")
        }
    }
}

/// The answer to an ``ItemDetailsRequest``: the details of the items the container has, in the order asked; an
/// item it does not have is left out.
public struct ItemDetailsResponse: Hashable, Sendable, Codable {
    /// The details found.
    public var items: [ItemDetailPayload]

    /// Creates an answer.
    public init(items: [ItemDetailPayload]) { self.items = items }
}
