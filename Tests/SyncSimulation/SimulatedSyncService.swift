import Crypto
import Foundation
import NIOCore
import SyncEngine
import Synchronization
import UbiquityProtocol
import UbiquityServer

/// One container of the service, in memory, with the real service's rules: the version rules of ``ItemVersions``,
/// the path rules of the SQLite store (one live item per ``ItemPath/collisionKey``, folders above live items that
/// other spellings may not use, a tombstone keeping its path without holding it), the change feed (every change to
/// an item appends an entry; tokens are `f1.<epoch>.<sequence>` as the real service writes them), chunks (a commit
/// needs all of its chunks, a chunk no kept version uses any more is forgotten) and the key-value store of
/// ``KeyValueStoreState``.
///
/// Each request method applies one request as one transaction, under a lock: it returns what the real route answers,
/// or throws the ``ProtocolError`` the real route throws and changes nothing. The world takes requests as the routes
/// have them after decoding (``SimulatedSyncService`` does the decoding, and stamps the saving device as the route
/// does). Nothing here reads a clock or draws a random number: tokens count, the epoch is given, and retention
/// measures the age of versions only against the clock it is given.
///
/// The inspection members (``liveItems()``, ``allVersions(of:)``, ``contentHashesEverKept``, …) are for a
/// simulation's invariant checks; they change nothing and are not part of the service.
///
/// ```swift
/// let world = ServiceWorld()
/// _ = try world.storeChunks([(hash: hash, bytes: bytes)])
/// let response = try world.createItem(CreateItemRequest(id: id, path: path, kind: .file, version: version))
/// ```
public final class ServiceWorld: Sendable {
    /// The container id a world has unless it is given one.
    public static let defaultContainer = try! ContainerID("TEAM.com.example.simulated")

    /// The container this world is, as its errors name it.
    public let container: ContainerID
    /// The sizes the service accepts (the real service's defaults unless given).
    public let limits: ServerConfiguration.Limits
    /// How many old versions, and for how long, are kept.
    public let retention: VersionRetention
    /// The time retention measures a version's age against; without it no version is ever too old.
    private let clock: (@Sendable () -> Date)?
    /// Everything that changes, behind one lock.
    private let state: Mutex<State>

    /// An empty container.
    /// - Parameters:
    ///   - container: The container's id, as errors name it.
    ///   - epoch: The feed's incarnation as tokens name it (after the first write; before it the real service
    ///     writes `0`). No `.` in it. A new world with another epoch is a service whose tokens a device must
    ///     forget.
    ///   - limits: The sizes the service accepts.
    ///   - retention: How many old versions, and for how long, are kept (the real service's default).
    ///   - keyValueLimits: The key-value store's limits (Apple's by default).
    ///   - clock: The time retention's maximum age is measured against; `nil` (the default) keeps versions
    ///     whatever their age, so only the count applies.
    public init(
        container: ContainerID = ServiceWorld.defaultContainer, epoch: String = "simulated",
        limits: ServerConfiguration.Limits = .init(), retention: VersionRetention = VersionRetention(),
        keyValueLimits: KeyValueLimits = .apple, clock: (@Sendable () -> Date)? = nil
    ) {
        precondition(!epoch.isEmpty && !epoch.contains("."), "an epoch is a non-empty string without dots")
        self.container = container
        self.limits = limits
        self.retention = retention
        self.clock = clock
        state = Mutex(
            State(
                container: container, epoch: epoch, limits: limits, retention: retention,
                keyValueStore: KeyValueStoreState(limits: keyValueLimits)))
    }

    /// The instant retention measures against now: the clock's, or one before any version so none is too old.
    private func retentionInstant() -> Date { clock?() ?? .distantPast }

    // MARK: Items and versions

    /// `GET …/items`: every item, tombstones included, ordered by path then id, and the feed position they reflect.
    public func items() -> ItemListResponse {
        state.withLock { $0.itemList() }
    }

    /// `GET …/items/{item}`: an item and its kept versions, newest first.
    /// - Throws: ``ProtocolError/Code/itemNotFound``.
    public func item(_ id: ItemID) throws -> ItemDetail {
        try state.withLock { try $0.item(id) }
    }

    /// `POST …/items`: creates an item, and commits its first version when the request has one. Creating an item
    /// that exists with the same path and kind is not an error (a retried request); with a version, that version
    /// is committed to it.
    /// - Throws: ``ProtocolError/Code/invalidManifest``, ``ProtocolError/Code/invalidRecord`` (a version of
    ///   another item), ``ProtocolError/Code/kindMismatch``, ``ProtocolError/Code/itemExists``,
    ///   ``ProtocolError/Code/versionExists``, ``ProtocolError/Code/chunksMissing`` or
    ///   ``ProtocolError/Code/pathCollision``.
    public func createItem(_ request: CreateItemRequest) throws -> ItemResponse {
        let now = retentionInstant()
        return try state.withLock { try $0.createItem(request, now: now) }
    }

    /// `POST …/items/{item}/versions`: commits a version whose chunks the service has (see ``ItemVersions``). A
    /// commit to a deleted item brings it back, if its path is free.
    /// - Throws: ``ProtocolError/Code/invalidManifest``, ``ProtocolError/Code/itemNotFound``,
    ///   ``ProtocolError/Code/kindMismatch``, ``ProtocolError/Code/versionExists``,
    ///   ``ProtocolError/Code/chunksMissing`` (naming the chunks) or ``ProtocolError/Code/pathCollision``.
    public func commit(_ version: VersionRecord) throws -> ItemResponse {
        try commit(VersionPayload(version))
    }

    /// `POST …/items/{item}/versions` with the manifest whole or as a delta against a kept version of the item; a
    /// delta's version is answered without the version when it is the one sent, as the real service does.
    /// - Throws: What ``commit(_:)`` throws; ``ProtocolError/Code/unknownVersion`` for a delta against a version
    ///   the item does not keep.
    public func commit(_ version: VersionPayload) throws -> ItemResponse {
        let now = retentionInstant()
        return try state.withLock { try $0.commit(version, now: now) }
    }

    /// `POST …/batch`: stores the chunks the request brings whose bytes are their hashes', then applies the
    /// operations in order, each on its own: one naming a chunk whose bytes were wrong is refused with
    /// ``ProtocolError/Code/chunkHashMismatch``, one the rules refuse with its error, as the real route answers.
    /// All of it at one moment of the world (the real route's one transaction).
    /// - Throws: ``ProtocolError/Code/bodyTooLarge`` for a chunk over the limit (nothing applied).
    public func applyItemBatch(_ request: ItemBatchRequest) throws -> ItemBatchResponse {
        // Only the chunks an operation names, as the real route looks at no other.
        let named = Set(request.operations.flatMap { $0.namedChunks.map(\.hash) })
        let brought = request.chunks.filter { named.contains($0.hash) }
        let actual = brought.map { Self.hash(of: Array($0.data)) }  // outside the lock: hashing is the slow part
        let now = retentionInstant()
        return try state.withLock { state in
            var wrong: [ChunkHash: ProtocolError] = [:]
            var right: [(hash: ChunkHash, bytes: [UInt8])] = []
            for (chunk, hash) in zip(brought, actual) {
                if hash == chunk.hash {
                    right.append((chunk.hash, Array(chunk.data)))
                } else {
                    wrong[chunk.hash] = ProtocolError(
                        .chunkHashMismatch, "the bytes sent as chunk \(chunk.hash) hash to \(hash); nothing was stored")
                }
            }
            _ = try state.storeChunks(right, actual: right.map(\.hash))
            var results: [ItemBatchResult] = []
            for operation in request.operations {
                if let error = operation.refusal(among: wrong) {
                    results.append(.refused(error))
                    continue
                }
                do {
                    switch operation {
                    case .create(let create): results.append(.applied(try state.createItem(create, now: now)))
                    case .commit(let version): results.append(.applied(try state.commit(version, now: now)))
                    }
                } catch let error as ProtocolError {
                    results.append(.refused(error))
                }
            }
            return ItemBatchResponse(results: results, token: results.compactMap(\.response).last?.token)
        }
    }

    /// `POST …/items/{item}/drafts/{version}`: grows the draft of a version being uploaded, as the real route does
    /// (the item a live file, the version not committed, the chunks held, the draft `from` long); each growth is
    /// news for the devices (``takeDraftNews()``).
    /// - Throws: ``ProtocolError/Code/itemNotFound``, ``ProtocolError/Code/itemDeleted``,
    ///   ``ProtocolError/Code/kindMismatch``, ``ProtocolError/Code/versionExists``,
    ///   ``ProtocolError/Code/chunksMissing`` or ``ProtocolError/Code/draftOutOfStep``.
    public func appendDraft(_ request: DraftAppendRequest, to version: VersionID, of item: ItemID) throws -> Int {
        try state.withLock { try $0.appendDraft(request, to: version, of: item) }
    }

    /// `GET …/items/{item}/drafts/{version}?from=`: the draft's chunks from `from` on; `nil` when there is none.
    public func draft(of version: VersionID, of item: ItemID, from: Int) -> DraftPage? {
        state.withLock { state in
            guard let draft = state.drafts[item], draft.version == version else { return nil }
            let start = min(max(0, from), draft.chunks.count)
            let end = min(draft.chunks.count, start + DraftPage.pageLimit)
            return DraftPage(count: draft.chunks.count, chunks: Array(draft.chunks[start..<end]))
        }
    }

    /// The drafts that grew since last asked, as push tells them: item, version and length.
    public func takeDraftNews() -> [(item: ItemID, version: VersionID, count: Int)] {
        state.withLock { state in
            defer { state.draftNews = [] }
            return state.draftNews
        }
    }

    /// `PATCH …/items/{item}`: moves an item; moving it where it is changes nothing.
    /// - Throws: ``ProtocolError/Code/itemNotFound``, ``ProtocolError/Code/itemDeleted`` or
    ///   ``ProtocolError/Code/pathCollision``.
    public func moveItem(_ id: ItemID, to path: ItemPath) throws -> ItemResponse {
        try state.withLock { try $0.moveItem(id, to: path) }
    }

    /// `DELETE …/items/{item}?basedOn=`: deletes an item whose current version is `basedOn` (it stays as a
    /// tombstone); deleting a tombstone changes nothing.
    /// - Throws: ``ProtocolError/Code/itemNotFound`` or ``ProtocolError/Code/staleDelete`` (naming the current
    ///   version).
    public func deleteItem(_ id: ItemID, basedOn: VersionID?) throws -> ItemResponse {
        try state.withLock { try $0.deleteItem(id, basedOn: basedOn) }
    }

    /// `POST …/items/{item}/versions/{version}/resolve`: marks a conflict version resolved.
    /// - Throws: ``ProtocolError/Code/itemNotFound``, ``ProtocolError/Code/unknownVersion`` or
    ///   ``ProtocolError/Code/notAConflict``.
    public func markResolved(_ version: VersionID, of item: ItemID) throws -> ItemResponse {
        try state.withLock { try $0.markResolved(version, of: item) }
    }

    /// `DELETE …/items/{item}/versions/{version}`: removes a version other than the current one; its chunks that
    /// no kept version uses any more are forgotten.
    /// - Throws: ``ProtocolError/Code/itemNotFound``, ``ProtocolError/Code/unknownVersion`` or
    ///   ``ProtocolError/Code/cannotRemoveCurrent``.
    public func removeVersion(_ version: VersionID, of item: ItemID) throws -> ItemResponse {
        try state.withLock { try $0.removeVersion(version, of: item) }
    }

    /// `POST …/items/{item}/current`: makes a kept version the current one, then prunes history by retention.
    /// - Throws: ``ProtocolError/Code/itemNotFound``, ``ProtocolError/Code/unknownVersion`` or
    ///   ``ProtocolError/Code/itemDeleted``.
    public func replaceCurrent(with version: VersionID, of item: ItemID) throws -> ItemResponse {
        let now = retentionInstant()
        return try state.withLock { try $0.replaceCurrent(with: version, of: item, now: now) }
    }

    // MARK: Chunks

    /// `POST …/chunks/missing`: the hashes among `chunks` the service has no chunk for, each once, in the order
    /// first asked.
    /// - Throws: ``ProtocolError/Code/bodyTooLarge`` (too many chunks) or ``ProtocolError/Code/malformedRequest``
    ///   (a size outside 0 to ``ServerConfiguration/Limits/chunkBytes``).
    public func missingChunks(_ chunks: [ChunkReference]) throws -> [ChunkHash] {
        try state.withLock { try $0.missingChunks(chunks) }
    }

    /// `POST …/chunks` (a ``ChunkBatch``): stores each chunk the service does not have, all or none. A chunk the
    /// service has is read past, its bytes unchecked, as the real route does.
    /// - Returns: How many chunks the batch held.
    /// - Throws: ``ProtocolError/Code/bodyTooLarge`` (a chunk or the batch too large) or
    ///   ``ProtocolError/Code/chunkHashMismatch`` (bytes that do not hash to their hash); nothing is stored.
    @discardableResult
    public func storeChunks(_ chunks: [(hash: ChunkHash, bytes: [UInt8])]) throws -> ChunkBatchResponse {
        let actual = chunks.map { Self.hash(of: $0.bytes) }  // outside the lock: hashing is the slow part
        return try state.withLock { try $0.storeChunks(chunks, actual: actual) }
    }

    /// `GET …/chunks/{hash}`: a chunk's bytes.
    /// - Throws: ``ProtocolError/Code/chunkNotFound`` for a chunk never stored, or forgotten since.
    public func chunk(_ hash: ChunkHash) throws -> [UInt8] {
        try state.withLock { try $0.chunk(hash) }
    }

    // MARK: Change feed and key-value store

    /// `GET …/changes?since=&limit=`: the feed's entries after `since` (from the start without it), oldest first;
    /// at most `limit`, lowered to ``ServerConfiguration/Limits/changesPerPage``.
    /// - Throws: ``ProtocolError/Code/malformedRequest`` for a `limit` below 1, or
    ///   ``ProtocolError/Code/changeTokenExpired`` for a token this feed did not give (another feed's, another
    ///   epoch's, or past the feed's end).
    public func changes(since: ChangeToken?, limit: Int) throws -> ChangePage {
        try state.withLock { try $0.changes(since: since, limit: limit) }
    }

    /// `GET …/kv?since=`: the whole store (tombstones left out) without `since`, or the writes after it
    /// (tombstones included), oldest write first.
    /// - Throws: ``ProtocolError/Code/changeTokenExpired`` for a token this store did not give.
    public func keyValues(since: ChangeToken?) throws -> KeyValueChanges {
        try state.withLock { try $0.keyValues(since: since) }
    }

    /// `POST …/kv`: applies a batch of writes from `device`, whole or not at all (see ``KeyValueStoreState``).
    /// - Throws: ``ProtocolError/Code/keyValueKeyTooLong``, ``ProtocolError/Code/keyValueTooManyKeys`` or
    ///   ``ProtocolError/Code/keyValueStoreTooLarge``; nothing changes.
    public func apply(_ batch: KeyValueBatch, from device: DeviceID) throws -> KeyValueBatchResponse {
        try state.withLock { try $0.apply(batch, from: device) }
    }

    // MARK: Inspection

    /// The feed's latest position, as a push would announce it.
    public var feedToken: ChangeToken { state.withLock { $0.token(.changes, at: $0.feed.count) } }

    /// The key-value store's latest position, as a push would announce it.
    public var keyValueToken: ChangeToken {
        state.withLock { $0.token(.keyValues, at: Int($0.keyValueStore.sequence)) }
    }

    /// Every entry the feed holds, oldest first.
    public var feed: [Change] { state.withLock { $0.feed } }

    /// The key-value store as it stands, tombstones included.
    public var keyValueStore: KeyValueStoreState { state.withLock { $0.keyValueStore } }

    /// The items that are not tombstones: where each is, what it is and its current version.
    public func liveItems() -> [ItemID: (path: ItemPath, kind: ItemKind, current: VersionRecord?)] {
        state.withLock { state in
            var live: [ItemID: (path: ItemPath, kind: ItemKind, current: VersionRecord?)] = [:]
            for (id, item) in state.items where !item.record.isDeleted {
                let current = item.versions.current.flatMap { item.versions.versions[$0] }
                live[id] = (path: item.record.path, kind: item.record.kind, current: current)
            }
            return live
        }
    }

    /// An item's record (a tombstone's too), or `nil` when there is no such item.
    public func record(of id: ItemID) -> ItemRecord? {
        state.withLock { $0.items[id]?.record }
    }

    /// Every version an item keeps: the current one first, then the unresolved conflict versions (winners first),
    /// then history (newest first). Empty for an unknown item.
    public func allVersions(of id: ItemID) -> [VersionRecord] {
        state.withLock { state in
            guard let versions = state.items[id]?.versions else { return [] }
            let current = versions.current.flatMap { versions.versions[$0] }
            let conflicts = versions.unresolvedConflicts.filter { $0.id != versions.current }
            return (current.map { [$0] } ?? []) + conflicts + versions.history
        }
    }

    /// A stored chunk's bytes, or `nil` when the service does not have it (never uploaded, or forgotten).
    public func bytes(of hash: ChunkHash) -> [UInt8]? {
        state.withLock { $0.chunks[hash] }
    }

    /// A file version's content put together from the stored chunks, or `nil` for a package version or when a
    /// chunk is not stored.
    public func content(of version: VersionRecord) -> [UInt8]? {
        guard case .file(let references) = version.manifest else { return nil }
        return state.withLock { state in
            var content: [UInt8] = []
            for reference in references {
                guard let bytes = state.chunks[reference.hash] else { return nil }
                content += bytes
            }
            return content
        }
    }

    /// The content hashes of every version now kept, of every item, tombstones included.
    public var contentHashesKept: Set<ChunkHash> {
        state.withLock { state in
            Set(state.items.values.flatMap { $0.versions.versions.values.map(\.contentHash) })
        }
    }

    /// The content hashes of every version the service ever kept, also of those removed or pruned since: whether
    /// a content saved somewhere ever reached the service as a version.
    public var contentHashesEverKept: Set<ChunkHash> { state.withLock { $0.contentHashesEverKept } }

    /// A short description of everything the world holds, one line per item, sorted: equal summaries mean nothing
    /// changed (every change to an item appends to the feed, every stored chunk counts).
    public var summary: String {
        state.withLock { state in
            let items = state.items.values.map { item in
                let record = item.record
                return "\(record.path) \(record.kind.rawValue) \(record.id) current "
                    + "\(record.currentVersion?.description ?? "none")\(record.isDeleted ? " deleted" : ""), "
                    + "\(item.versions.versions.count) version(s)"
            }
            let head =
                "service: \(state.feed.count) change(s), key-value sequence \(state.keyValueStore.sequence), "
                + "\(state.chunks.count) chunk(s)"
            return ([head] + items.sorted()).joined(separator: "\n  ")
        }
    }

    /// The SHA-256 of `bytes` as a chunk hash: a chunk's hash, and a file's content hash.
    public static func hash(of bytes: [UInt8]) -> ChunkHash {
        // A SHA-256 digest always has 32 bytes.
        try! ChunkHash(digest: SHA256.hash(data: bytes))
    }
}

// MARK: - The state and its rules

extension ServiceWorld {
    /// What the world holds; each request is one mutating method, which throws before it changes anything.
    struct State {
        /// An item as stored: its record (kept in step with its versions) and its versions.
        struct StoredItem {
            var record: ItemRecord
            var versions: ItemVersions
        }

        /// What one item operation did, before its feed position is known.
        struct ItemChange {
            var changes: [Change]
            var outcome: CommitOutcome? = nil
            var version: VersionRecord? = nil
        }

        /// A folder above live items: its spelling as first used and how many live items are beneath it.
        struct Folder {
            var path: String
            var itemCount: Int
        }

        /// The two histories a token may name, by the prefix the real service writes.
        enum Feed: String {
            case changes = "f1"
            case keyValues = "k1"
        }

        let container: ContainerID
        let epoch: String
        let limits: ServerConfiguration.Limits
        let retention: VersionRetention
        /// Whether anything has been written (the real service makes the container's row, and its epoch, then).
        var isCreated = false
        /// Every item, tombstones included.
        var items: [ItemID: StoredItem] = [:]
        /// The live item holding each collision key.
        var liveItemByKey: [String: ItemID] = [:]
        /// The folders above live items, by collision key.
        var folders: [String: Folder] = [:]
        /// The item each kept version belongs to (version ids are unique across the container).
        var versionOwners: [VersionID: ItemID] = [:]
        /// The stored chunks' bytes.
        var chunks: [ChunkHash: [UInt8]] = [:]
        /// How many kept versions use each chunk.
        var chunkUsers: [ChunkHash: Int] = [:]
        /// The change feed; an entry's sequence number is its index plus one.
        var feed: [Change] = []
        /// The key-value store.
        var keyValueStore: KeyValueStoreState
        /// The content hash of every version ever kept.
        var contentHashesEverKept: Set<ChunkHash> = []
        /// Each item's draft of a version being uploaded; a commit of a version of the item ends it.
        var drafts: [ItemID: (version: VersionID, chunks: [ChunkReference])] = [:]
        /// The drafts' growth not yet told to the devices.
        var draftNews: [(item: ItemID, version: VersionID, count: Int)] = []

        init(
            container: ContainerID, epoch: String, limits: ServerConfiguration.Limits, retention: VersionRetention,
            keyValueStore: KeyValueStoreState
        ) {
            self.container = container
            self.epoch = epoch
            self.limits = limits
            self.retention = retention
            self.keyValueStore = keyValueStore
        }

        // MARK: Reading items

        func itemList() -> ItemListResponse {
            let records = items.values.map(\.record).sorted { $0.path != $1.path ? $0.path < $1.path : $0.id < $1.id }
            return ItemListResponse(items: records, token: token(.changes, at: feed.count))
        }

        func item(_ id: ItemID) throws -> ItemDetail {
            let item = try loadExisting(id)
            let versions = item.versions.versions.values.sorted { VersionRecord.precedes($1, $0) }
            return ItemDetail(item: item.record, versions: versions)
        }

        // MARK: Changing items

        mutating func createItem(_ request: CreateItemRequest, now: Date) throws -> ItemResponse {
            if let version = request.version {
                try version.manifest.validate()
                try Self.check(version, fits: request.kind, of: request.id)
            }
            if let existing = items[request.id] {
                guard existing.record.path == request.path, existing.record.kind == request.kind else {
                    throw ProtocolError(
                        .itemExists,
                        "item \(request.id) exists already, at \(existing.record.path) as a "
                            + "\(existing.record.kind.rawValue)")
                }
                guard let version = request.version else {
                    return ItemResponse(item: existing.record, token: token(.changes, at: feed.count))
                }
                return try commit(version, to: existing, now: now)
            }
            let record = ItemRecord(id: request.id, path: request.path, kind: request.kind)
            var item = StoredItem(record: record, versions: ItemVersions(itemID: request.id))
            var change = ItemChange(changes: [.itemCreated(itemID: request.id, path: request.path, kind: request.kind)])
            if let version = request.version {
                let committed = try apply(version, to: &item, now: now)
                change.changes += committed.changes
                change.outcome = committed.outcome
                change.version = committed.version
            }
            return try save(item, before: nil, change: change)
        }

        mutating func appendDraft(_ request: DraftAppendRequest, to version: VersionID, of id: ItemID) throws -> Int {
            let stored = try loadExisting(id)
            guard !stored.record.isDeleted else { throw ProtocolError(.itemDeleted, "item \(id) is deleted") }
            guard stored.record.kind == .file else {
                throw ProtocolError(.kindMismatch, "only a file's versions have drafts; item \(id) is a package")
            }
            guard versionOwners[version] == nil else {
                throw ProtocolError(.versionExists, "\(version) is committed already")
            }
            let lacking = missing(request.chunks.map(\.hash))
            guard lacking.isEmpty else {
                throw ProtocolError(.chunksMissing, "the account has no chunk \(lacking[0])")
            }
            var draft = drafts[id].flatMap { $0.version == version ? $0 : nil } ?? (version: version, chunks: [])
            guard draft.chunks.count == request.from else {
                throw ProtocolError(
                    .draftOutOfStep, "the draft of \(version) holds \(draft.chunks.count) chunks, not \(request.from)")
            }
            draft.chunks += request.chunks.prefix(max(0, DraftPage.draftLimit - draft.chunks.count))
            drafts[id] = draft
            if !request.chunks.isEmpty { draftNews.append((id, version, draft.chunks.count)) }
            return draft.chunks.count
        }

        mutating func commit(_ payload: VersionPayload, now: Date) throws -> ItemResponse {
            let item = try loadExisting(payload.itemID)
            let version = try payload.resolved { item.versions.versions[$0]?.manifest }
            try version.manifest.validate()
            try Self.check(version, fits: item.record.kind, of: item.record.id)
            var response = try commit(version, to: item, now: now)
            if payload.deltaBase != nil, response.version?.id == version.id { response.version = nil }
            return response
        }

        mutating func moveItem(_ id: ItemID, to path: ItemPath) throws -> ItemResponse {
            try update(id) { item in
                guard !item.versions.isDeleted else { throw ProtocolError(.itemDeleted, "\(id) is deleted") }
                let from = item.record.path
                guard from != path else { return ItemChange(changes: []) }
                item.record.path = path
                return ItemChange(changes: [.itemMoved(itemID: id, from: from, to: path)])
            }
        }

        mutating func deleteItem(_ id: ItemID, basedOn: VersionID?) throws -> ItemResponse {
            try update(id) { item in ItemChange(changes: try item.versions.delete(basedOn: basedOn)) }
        }

        mutating func markResolved(_ version: VersionID, of item: ItemID) throws -> ItemResponse {
            try update(item) { item in ItemChange(changes: try item.versions.markResolved(version)) }
        }

        mutating func removeVersion(_ version: VersionID, of item: ItemID) throws -> ItemResponse {
            try update(item) { item in ItemChange(changes: try item.versions.remove(version)) }
        }

        mutating func replaceCurrent(with version: VersionID, of item: ItemID, now: Date) throws -> ItemResponse {
            let retention = self.retention
            return try update(item) { item in
                var changes = try item.versions.replace(with: version)
                changes += item.versions.prune(retention, now: now)
                return ItemChange(changes: changes)
            }
        }

        /// Runs `body` on a copy of the stored item and saves the result; nothing changes if either throws.
        private mutating func update(_ id: ItemID, _ body: (inout StoredItem) throws -> ItemChange) throws
            -> ItemResponse
        {
            let before = try loadExisting(id)
            var item = before
            let change = try body(&item)
            return try save(item, before: before, change: change)
        }

        private mutating func commit(_ version: VersionRecord, to stored: StoredItem, now: Date) throws
            -> ItemResponse
        {
            var item = stored
            let change = try apply(version, to: &item, now: now)
            return try save(item, before: stored, change: change)
        }

        /// Commits `version` to `item` (a copy) after checking its id is new and its chunks are all stored.
        private func apply(_ version: VersionRecord, to item: inout StoredItem, now: Date) throws -> ItemChange {
            var version = version
            version.modificationDate = Self.asStored(version.modificationDate)
            if let owner = versionOwners[version.id], let existing = items[owner]?.versions.versions[version.id] {
                guard owner == version.itemID, existing.contentHash == version.contentHash else {
                    throw ProtocolError(.versionExists, "version \(version.id) exists already with other content")
                }
                return ItemChange(changes: [], outcome: .identical, version: existing)
            }
            let absent = missing(version.manifest.chunks.map(\.hash))
            guard absent.isEmpty else {
                throw ProtocolError(
                    .chunksMissing, "\(absent.count) chunk(s) of version \(version.id) have not been uploaded",
                    missingChunks: absent)
            }
            let committed = item.versions.commit(version)
            var changes = committed.changes
            switch committed.outcome {
            case .becameCurrent(let id):
                changes += item.versions.prune(retention, now: now)
                return ItemChange(changes: changes, outcome: .current, version: item.versions.versions[id])
            case .keptAsConflict(let id, _):
                return ItemChange(changes: changes, outcome: .conflict, version: item.versions.versions[id])
            case .identical(let existing):
                return ItemChange(changes: changes, outcome: .identical, version: item.versions.versions[existing])
            }
        }

        /// Refuses a version that is not of `item` or whose content does not fit the item's kind.
        private static func check(_ version: VersionRecord, fits kind: ItemKind, of item: ItemID) throws {
            guard version.itemID == item else {
                throw ProtocolError(.invalidRecord, "version \(version.id) names item \(version.itemID), not \(item)")
            }
            switch (kind, version.manifest) {
            case (.file, .file), (.package, .package): return
            case (.directory, _): throw ProtocolError(.kindMismatch, "a directory has no content versions")
            default:
                throw ProtocolError(
                    .kindMismatch, "version \(version.id) does not hold the content of a \(kind.rawValue)")
            }
        }

        /// Stores the item's new state: gives up and takes paths (the only step that may refuse, with
        /// ``ProtocolError/Code/pathCollision``, before anything changes), tracks versions and the chunks they use,
        /// and appends the changes to the feed.
        private mutating func save(_ item: StoredItem, before: StoredItem?, change: ItemChange) throws -> ItemResponse {
            // A version committed, or the item deleted, ends the item's draft, as on the real service.
            if change.version != nil || item.versions.isDeleted { drafts[item.record.id] = nil }
            var record = item.record
            record.currentVersion = item.versions.current
            record.isDeleted = item.versions.isDeleted
            let wasLive = before.map { !$0.record.isDeleted } ?? false
            let moved = before?.record.path != record.path
            let released = wasLive && (record.isDeleted || moved) ? before?.record.path : nil
            let claims = !record.isDeleted && (!wasLive || moved)
            if released != nil || claims {
                var updatedFolders = self.folders
                if let released { Self.release(released, from: &updatedFolders) }
                // Checked against the items as they were, as the real store checks before it writes the item's row.
                if claims { try claim(record.path, kind: record.kind, for: record.id, folders: &updatedFolders) }
                folders = updatedFolders
                if let released, liveItemByKey[released.collisionKey] == record.id {
                    liveItemByKey[released.collisionKey] = nil
                }
                if claims { liveItemByKey[record.path.collisionKey] = record.id }
            }
            let old = before?.versions.versions ?? [:]
            let new = item.versions.versions
            for (id, version) in new where old[id] == nil { reference(version) }
            for (id, version) in old where new[id] == nil { release(version) }
            items[record.id] = StoredItem(record: record, versions: item.versions)
            isCreated = true
            feed += change.changes
            return ItemResponse(
                item: record, outcome: change.outcome, version: change.version, token: token(.changes, at: feed.count))
        }

        /// Records a newly kept version and the chunks it uses.
        private mutating func reference(_ version: VersionRecord) {
            versionOwners[version.id] = version.itemID
            contentHashesEverKept.insert(version.contentHash)
            for hash in Set(version.manifest.chunks.map(\.hash)) { chunkUsers[hash, default: 0] += 1 }
        }

        /// Drops a removed version; a chunk no kept version uses any more is forgotten (a later upload of the same
        /// bytes stores it again).
        private mutating func release(_ version: VersionRecord) {
            versionOwners[version.id] = nil
            for hash in Set(version.manifest.chunks.map(\.hash)) {
                let users = chunkUsers[hash, default: 0] - 1
                if users > 0 {
                    chunkUsers[hash] = users
                } else {
                    chunkUsers[hash] = nil
                    chunks[hash] = nil
                }
            }
        }

        private func loadExisting(_ id: ItemID) throws -> StoredItem {
            guard let item = items[id] else {
                throw ProtocolError(.itemNotFound, "no item \(id) in container \(container)")
            }
            return item
        }

        // MARK: Paths

        /// Takes `path` for the live item `id` of `kind` in `folders`, or refuses with
        /// ``ProtocolError/Code/pathCollision``: no other live item with the path's collision key, no folder of
        /// another spelling (nor any folder, for an item that is not a directory), and above it only directories
        /// and folders spelled as in the path.
        private func claim(
            _ path: ItemPath, kind: ItemKind, for id: ItemID, folders: inout [String: Folder]
        ) throws {
            func refuse(_ why: String) -> ProtocolError {
                ProtocolError(.pathCollision, "\(path) cannot be used: \(why)")
            }
            if let other = liveItem(key: path.collisionKey), other.id != id {
                throw refuse(
                    other.path == path
                        ? "another item is there" : "it differs only in case or normalisation from \(other.path)")
            }
            if let folder = folders[path.collisionKey]?.path {
                guard kind == .directory else { throw refuse("\(folder) is a folder holding other items") }
                guard folder == path.string else {
                    throw refuse("it differs only in case or normalisation from the folder \(folder)")
                }
            }
            for ancestor in path.ancestors {
                if let item = liveItem(key: ancestor.collisionKey), item.kind != .directory || item.path != ancestor {
                    throw refuse(
                        item.path == ancestor
                            ? "\(item.path) is not a folder"
                            : "\(ancestor) differs only in case or normalisation from \(item.path)")
                }
                if let folder = folders[ancestor.collisionKey]?.path, folder != ancestor.string {
                    throw refuse("\(ancestor) differs only in case or normalisation from the folder \(folder)")
                }
            }
            for ancestor in path.ancestors {
                folders[ancestor.collisionKey, default: Folder(path: ancestor.string, itemCount: 0)].itemCount += 1
            }
        }

        /// Gives up `path`, held by a live item that is being deleted or moved.
        private static func release(_ path: ItemPath, from folders: inout [String: Folder]) {
            for ancestor in path.ancestors {
                let key = ancestor.collisionKey
                guard var folder = folders[key] else { continue }
                folder.itemCount -= 1
                folders[key] = folder.itemCount > 0 ? folder : nil
            }
        }

        /// The record of the live item holding `key`, as stored before the request.
        private func liveItem(key: String) -> ItemRecord? {
            liveItemByKey[key].flatMap { items[$0]?.record }
        }

        // MARK: Chunks

        func missingChunks(_ chunks: [ChunkReference]) throws -> [ChunkHash] {
            guard chunks.count <= limits.chunksPerRequest else {
                throw ProtocolError(
                    .bodyTooLarge, "at most \(limits.chunksPerRequest) chunks may be asked about at once")
            }
            let limit = limits.chunkBytes
            if let bad = chunks.first(where: { !(0...Int64(limit)).contains($0.size) }) {
                throw ProtocolError(
                    .malformedRequest, "chunk \(bad.hash) has size \(bad.size); a chunk is 0 to \(limit) bytes")
            }
            return missing(chunks.map(\.hash))
        }

        /// Which of `hashes` the service has no chunk for, each once, in the order given.
        private func missing(_ hashes: [ChunkHash]) -> [ChunkHash] {
            var seen: Set<ChunkHash> = []
            return hashes.filter { seen.insert($0).inserted && chunks[$0] == nil }
        }

        /// Stores a batch; `actual` holds the real hash of each chunk's bytes.
        mutating func storeChunks(_ batch: [(hash: ChunkHash, bytes: [UInt8])], actual: [ChunkHash]) throws
            -> ChunkBatchResponse
        {
            let body = batch.reduce(0) { $0 + ChunkBatch.headerBytes + $1.bytes.count }
            guard body <= limits.chunkBatchBytes else {
                throw ProtocolError(
                    .bodyTooLarge, "a batch of chunks is at most \(limits.chunkBatchBytes) bytes; this one is \(body)")
            }
            var uploads: [Int] = []
            for (index, chunk) in batch.enumerated() {
                guard chunk.bytes.count <= limits.chunkBytes else {
                    throw ProtocolError(
                        .bodyTooLarge,
                        "a chunk is at most \(limits.chunkBytes) bytes; \(chunk.hash) is \(chunk.bytes.count)")
                }
                if chunks[chunk.hash] == nil { uploads.append(index) }
            }
            for index in uploads where actual[index] != batch[index].hash {
                throw ProtocolError(
                    .chunkHashMismatch,
                    "the bytes sent hash to \(actual[index]), not \(batch[index].hash); nothing was stored")
            }
            for index in uploads { chunks[batch[index].hash] = batch[index].bytes }
            return ChunkBatchResponse(received: batch.count)
        }

        func chunk(_ hash: ChunkHash) throws -> [UInt8] {
            guard let bytes = chunks[hash] else {
                throw ProtocolError(.chunkNotFound, "the account has no chunk \(hash)")
            }
            return bytes
        }

        // MARK: Feed and key-value store

        func changes(since: ChangeToken?, limit: Int) throws -> ChangePage {
            guard limit > 0 else { throw ProtocolError(.malformedRequest, "limit must be a positive whole number") }
            let pageSize = min(max(1, min(limit, limits.changesPerPage)), 100_000)
            let start = try since.map { try position(of: $0, in: .changes, latest: feed.count) } ?? 0
            let end = min(feed.count, start + pageSize)
            let changes = Array(feed[start..<end])
            // As the real service does: the small first versions of the items the page creates, as they are now, while
            // the items are still as they were made.
            let versions = FeedVersions.wanted(by: changes).compactMap { wanted -> VersionRecord? in
                guard let item = items[wanted.item],
                    FeedVersions.isStill(
                        wanted, path: item.record.path.string, currentVersion: item.record.currentVersion?.string,
                        isDeleted: item.record.isDeleted)
                else { return nil }
                return item.versions.versions[wanted.version]
            }.filter(FeedVersions.carries)
            return ChangePage(
                changes: changes, nextToken: token(.changes, at: end), hasMore: end < feed.count, versions: versions)
        }

        func keyValues(since: ChangeToken?) throws -> KeyValueChanges {
            let latest = Int(keyValueStore.sequence)
            let start = try since.map { try position(of: $0, in: .keyValues, latest: latest) }
            let entries = keyValueStore.changes(since: UInt64(start ?? 0))
                .filter { start != nil || $0.entry.value != nil }
                .map {
                    KeyValueEntry(
                        key: $0.key, value: $0.entry.value, timestamp: $0.entry.timestamp, device: $0.entry.device)
                }
            return KeyValueChanges(entries: entries, token: token(.keyValues, at: latest))
        }

        mutating func apply(_ batch: KeyValueBatch, from device: DeviceID) throws -> KeyValueBatchResponse {
            // As the real store holds them: timestamps and dates inside values in whole microseconds.
            let writes = batch.writes.map { write in
                KeyValueStoreState.Write(
                    key: write.key, value: write.value.map { Self.asStored($0) },
                    timestamp: Self.asStored(write.timestamp))
            }
            let changed = try keyValueStore.apply(writes, from: device)
            isCreated = true
            let position = token(.keyValues, at: Int(keyValueStore.sequence))
            return KeyValueBatchResponse(changedKeys: changed, token: position)
        }

        // MARK: Tokens

        /// The epoch tokens name: the given one once anything has been written, `0` before, as the real service.
        private var currentEpoch: String { isCreated ? epoch : "0" }

        /// The token naming the position after `sequence` entries of `feed`.
        func token(_ feed: Feed, at sequence: Int) -> ChangeToken {
            ChangeToken("\(feed.rawValue).\(currentEpoch).\(sequence)")
        }

        /// The number of entries of `feed` before the position `token` names.
        /// - Throws: ``ProtocolError/Code/changeTokenExpired`` for a token of another feed or epoch, or past the
        ///   latest entry (a token at 0 names the beginning of any epoch).
        private func position(of token: ChangeToken, in feed: Feed, latest: Int) throws -> Int {
            let parts = token.string.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0] == feed.rawValue, let sequence = Int64(parts[2]), sequence >= 0,
                sequence == 0 || (parts[1] == currentEpoch && sequence <= Int64(latest))
            else { throw ProtocolError.changeTokenExpired(token) }
            return Int(sequence)
        }

        // MARK: Stored forms

        /// A date as the store holds it: in whole microseconds.
        static func asStored(_ date: Date) -> Date {
            WireTimestamp.date(microseconds: WireTimestamp.microseconds(of: date))
        }

        /// A property-list value as the store holds it: its dates in whole microseconds.
        static func asStored(_ value: PropertyListValue) -> PropertyListValue {
            switch value {
            case .date(let date): .date(asStored(date))
            case .array(let values): .array(values.map { asStored($0) })
            case .dictionary(let values): .dictionary(values.mapValues { asStored($0) })
            case .string, .integer, .double, .bool, .data: value
            }
        }
    }
}

// MARK: - The service as a device reaches it

/// The engine's ``SyncService`` against a ``ServiceWorld``, for a deterministic simulation of several devices: each
/// request is handed to the simulation's scheduler (``Delivery``), which decides when it reaches the world and
/// whether its answer comes back.
///
/// What the HTTP routes do around the store is done here: requests and answers go through JSON as on the wire
/// (dates to whole microseconds, manifests validated, a body over ``ServerConfiguration/Limits/jsonBodyBytes``
/// refused), a committed version's saving device is the signed-in ``device`` (when one is given), and key-value
/// writes are the device's. A request for another container than ``container`` is refused with
/// ``ProtocolError/Code/containerNotPermitted``.
///
/// ```swift
/// let service = SimulatedSyncService(
///     world: world, container: world.container, deliver: SimulatedSyncService.immediately)
/// let page = try await service.changes(in: world.container, since: nil, limit: 100)
/// ```
public struct SimulatedSyncService: SyncService {
    /// How a request reaches the world: `deliver` is called with the work to do against the world; it may run it
    /// now or later, and may drop the answer (throw instead of returning). The simulation's scheduler supplies it.
    public typealias Delivery =
        @Sendable (_ label: String, _ work: @escaping @Sendable () throws -> any Sendable) async throws -> any Sendable

    /// The writer of key-value writes when no ``device`` is given: the all-zero id.
    public static let unknownDevice = DeviceID(uuid: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))

    /// A delivery that runs every request at once and always answers.
    public static let immediately: Delivery = { _, work in try work() }

    /// The world requests reach.
    public let world: ServiceWorld
    /// The container the device may use (each request's container is checked against it).
    public let container: ContainerID
    /// The signed-in device, as the real service knows it from the token: the saving device of the versions it
    /// commits, the writer of its key-value writes. Without it, versions keep the device they name (the engine
    /// names its own) and key-value writes are from ``unknownDevice``.
    public let device: SavingDevice?
    /// Whether requests and answers go through JSON as on the real wire; off saves time in long runs.
    public let usesJSON: Bool
    /// Called with the item as a deletion of it reaches the world, before it applies: the checks' hook.
    public let onDelete: (@Sendable (ItemID) -> Void)?
    /// Whether the chunks a batch brings are read (`false`: dropped unread, as a service older than them does).
    public var readsBroughtChunks = true
    /// The scheduler's hook.
    private let deliver: Delivery

    /// A device's view of the service.
    /// - Parameters:
    ///   - world: The world requests reach.
    ///   - container: The container the device may use.
    ///   - device: The signed-in device, or `nil` to keep the saving device each version names.
    ///   - usesJSON: Whether requests and answers go through JSON (the default), as on the wire.
    ///   - onDelete: Called with the item as a deletion of it reaches the world.
    ///   - deliver: When and whether requests arrive and answers come back.
    public init(
        world: ServiceWorld, container: ContainerID, device: SavingDevice? = nil, usesJSON: Bool = true,
        onDelete: (@Sendable (ItemID) -> Void)? = nil, deliver: @escaping Delivery
    ) {
        self.world = world
        self.container = container
        self.device = device
        self.usesJSON = usesJSON
        self.onDelete = onDelete
        self.deliver = deliver
    }

    // MARK: Items and versions

    public func items(in container: ContainerID) async throws -> ItemListResponse {
        try await call("items", in: container) { try answered(world.items()) }
    }

    public func item(_ id: ItemID, have: VersionRecord?, in container: ContainerID) async throws -> ItemDetail {
        try await call("item \(id)", in: container) {
            let detail = try world.item(id)
            guard let have else { return try answered(detail) }
            // As the real service answers with `have`: manifests as deltas against the version named, made whole
            // again on the device's side.
            let payload = ItemDetailPayload(detail, have: detail.versions.first { $0.id == have.id })
            return try answered(payload).resolved(have: have)
        }
    }

    public func items(_ asked: [(id: ItemID, have: VersionRecord?)], in container: ContainerID) async throws
        -> [ItemDetail]
    {
        try await call("details of \(asked.count) item(s)", in: container) {
            // One request, one moment of the world, as the real route reads them.
            let request = try received(ItemDetailsRequest(items: asked.map { .init(id: $0.id, have: $0.have?.id) }))
            var found: [ItemDetailPayload] = []
            for entry in request.items {
                guard let detail = try? world.item(entry.id) else { continue }
                let have = entry.have.flatMap { have in detail.versions.first { $0.id == have } }
                found.append(ItemDetailPayload(detail, have: have))
            }
            let held = Dictionary(asked.compactMap { entry in entry.have.map { (entry.id, $0) } }) { first, _ in first }
            return try answered(ItemDetailsResponse(items: found)).items.map { payload in
                try payload.resolved(have: held[payload.item.id])
            }
        }
    }

    public func createItem(_ request: CreateItemRequest, in container: ContainerID) async throws -> ItemResponse {
        try await call("create \(request.id) at \(request.path)", in: container) {
            var received = try self.received(request)
            if let device { received.version?.savingDevice = device }
            return try answered(try world.createItem(received))
        }
    }

    public func commit(_ version: VersionPayload, in container: ContainerID) async throws -> ItemResponse {
        let form = version.deltaBase.map { " as a delta against \($0)" } ?? ""
        return try await call("commit \(version.id) of \(version.itemID)\(form)", in: container) {
            var received = try self.received(version)
            if let device { received.savingDevice = device }
            return try answered(try world.commit(received))
        }
    }

    public func applyItemBatch(_ request: ItemBatchRequest, in container: ContainerID) async throws
        -> ItemBatchResponse
    {
        let named = request.operations.map { operation in
            switch operation {
            case .create(let create): "create \(create.id) at \(create.path)"
            case .commit(let version): "commit \(version.id) of \(version.itemID)"
            }
        }
        let label = "batch [\(named.joined(separator: "; "))] with \(request.chunks.count) chunk(s)"
        return try await call(label, in: container) {
            var received = try self.received(request)
            try received.validate()
            if !readsBroughtChunks { received.chunks = [] }
            if let device { received.operations = received.operations.map { $0.saved(by: device) } }
            return try answered(try world.applyItemBatch(received))
        }
    }

    public func appendDraft(
        _ request: DraftAppendRequest, to version: VersionID, of item: ItemID, in container: ContainerID
    ) async throws -> Int {
        try await call("draft of \(version) of \(item) from \(request.from)", in: container) {
            let received = try self.received(request)
            return try answered(DraftPage(count: try world.appendDraft(received, to: version, of: item), chunks: []))
                .count
        }
    }

    public func draft(of version: VersionID, of item: ItemID, from: Int, in container: ContainerID) async throws
        -> DraftPage?
    {
        try await call("read draft of \(version) of \(item) from \(from)", in: container) {
            guard let page = world.draft(of: version, of: item, from: from) else { return DraftPage?.none }
            return try answered(page)
        }
    }

    public func moveItem(_ id: ItemID, to path: ItemPath, in container: ContainerID) async throws -> ItemResponse {
        try await call("move \(id) to \(path)", in: container) {
            let received = try self.received(MoveItemRequest(path: path))
            return try answered(try world.moveItem(id, to: received.path))
        }
    }

    public func deleteItem(_ id: ItemID, basedOn: VersionID?, in container: ContainerID) async throws -> ItemResponse {
        try await call("delete \(id) based on \(basedOn?.description ?? "no version")", in: container) {
            onDelete?(id)
            return try answered(try world.deleteItem(id, basedOn: basedOn))
        }
    }

    public func markResolved(_ id: VersionID, of item: ItemID, in container: ContainerID) async throws -> ItemResponse {
        try await call("resolve \(id) of \(item)", in: container) {
            try answered(try world.markResolved(id, of: item))
        }
    }

    public func removeVersion(_ id: VersionID, of item: ItemID, in container: ContainerID) async throws -> ItemResponse
    {
        try await call("remove \(id) of \(item)", in: container) {
            try answered(try world.removeVersion(id, of: item))
        }
    }

    public func replaceCurrent(with id: VersionID, of item: ItemID, in container: ContainerID) async throws
        -> ItemResponse
    {
        try await call("replace current of \(item) with \(id)", in: container) {
            let received = try self.received(ReplaceCurrentRequest(versionID: id))
            return try answered(try world.replaceCurrent(with: received.versionID, of: item))
        }
    }

    // MARK: Chunks

    public func missingChunks(_ chunks: [ChunkReference], in container: ContainerID) async throws -> [ChunkHash] {
        try await call("missing chunks of \(chunks.count)", in: container) {
            let received = try self.received(MissingChunksRequest(chunks: chunks))
            return try answered(MissingChunksResponse(missing: try world.missingChunks(received.chunks))).missing
        }
    }

    public func uploadChunks(_ chunks: [(hash: ChunkHash, bytes: ByteBuffer)], in container: ContainerID) async throws {
        let sent = chunks.map { (hash: $0.hash, bytes: Array($0.bytes.readableBytesView)) }
        let _: ChunkBatchResponse = try await call("upload \(sent.count) chunks", in: container) {
            try answered(try world.storeChunks(sent))
        }
    }

    /// Hands the chunk's bytes to `receive` in one piece (none for an empty chunk, as an empty body has no piece).
    public func downloadChunk(
        _ hash: ChunkHash, in container: ContainerID, into receive: (ByteBuffer) throws -> Void
    ) async throws {
        let bytes: [UInt8] = try await call("download \(hash)", in: container) { try world.chunk(hash) }
        if !bytes.isEmpty { try receive(ByteBuffer(bytes: bytes)) }
    }

    // MARK: Change feed and key-value store

    public func changes(in container: ContainerID, since: ChangeToken?, limit: Int, chunkBytes: Int) async throws
        -> ChangePage
    {
        try await call("changes since \(since?.description ?? "the start")", in: container) {
            var page = try world.changes(since: since, limit: limit)
            // As the real route adds them (a chunk the world lacks now left out, as the route leaves out one it
            // cannot read).
            for chunk in ChangePage.carriedChunks(of: page.versions, savedByOtherThan: device?.id, upTo: chunkBytes) {
                guard let bytes = try? world.chunk(chunk.hash), bytes.count == chunk.size else { continue }
                page.chunks.append(InlineChunk(hash: chunk.hash, data: Data(bytes)))
            }
            return try answered(page)
        }
    }

    public func keyValues(in container: ContainerID, since: ChangeToken?) async throws -> KeyValueChanges {
        try await call("key values since \(since?.description ?? "the start")", in: container) {
            try answered(try world.keyValues(since: since))
        }
    }

    public func apply(_ batch: KeyValueBatch, in container: ContainerID) async throws -> KeyValueBatchResponse {
        try await call("key-value batch of \(batch.writes.count)", in: container) {
            let received = try self.received(batch)
            return try answered(try world.apply(received, from: device?.id ?? Self.unknownDevice))
        }
    }

    // MARK: Delivery and the wire

    /// Hands `work` to the scheduler, after the container check the real route makes, and returns its answer.
    private func call<Answer: Sendable>(
        _ label: String, in container: ContainerID, _ work: @escaping @Sendable () throws -> Answer
    ) async throws -> Answer {
        let permitted = self.container
        let answer = try await deliver(label) {
            guard container == permitted else {
                throw ProtocolError(.containerNotPermitted, "this device's token may not use container \(container)")
            }
            return try work()
        }
        guard let typed = answer as? Answer else {
            preconditionFailure("the delivery of \"\(label)\" answered a \(type(of: answer)), not a \(Answer.self)")
        }
        return typed
    }

    /// A request body as the route decodes it.
    /// - Throws: ``ProtocolError/Code/bodyTooLarge``, ``ProtocolError/Code/malformedRequest`` or the code of a
    ///   wire type's own check.
    private func received<Request: Codable>(_ request: Request) throws -> Request {
        guard usesJSON else { return request }
        let body = try JSONEncoder().encode(request)
        let limit = world.limits.jsonBodyBytes
        guard body.count <= limit else {
            throw ProtocolError(.bodyTooLarge, "the body is \(body.count) bytes; this route accepts at most \(limit)")
        }
        do {
            return try JSONDecoder().decode(Request.self, from: body)
        } catch let error as DecodingError {
            throw ProtocolError(.malformedRequest, "the body is not a valid \(Request.self): \(error)")
        }
    }

    /// An answer as the device decodes it.
    private func answered<Answer: Codable>(_ answer: Answer) throws -> Answer {
        guard usesJSON else { return answer }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try JSONDecoder().decode(Answer.self, from: encoder.encode(answer))
    }
}
