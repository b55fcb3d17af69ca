import Foundation
import PostgresNIO
import UbiquityProtocol

/// The item tables of one locked container as one write transaction sees them, read once and written once.
///
/// A transaction of the group committer (``PostgresItemCommitter``) runs many item operations. Each statement is a
/// round trip to the database, and the container's lock is held for all of them, so the operations do not send
/// their own: the work reads what they will need in a few statements (``prefetch(_:)``), answers their reads from
/// what it holds, and keeps their writes until ``flush()`` sends them all, a few statements for the whole
/// transaction. A read the prefetch did not foresee goes to the database. That is safe because whatever this
/// transaction has written is held here and answered from here: a key the database is asked about was not written
/// by it. Writes that depend on rows no key names (forgetting chunks no version uses any more) are decided at the
/// flush, after every reference the transaction adds is in place.
///
/// An operation refused with a ``ProtocolError`` is undone by putting back ``contents`` as they were before it.
final class PostgresItemWork {
    let db: PostgresTransaction
    let container: ContainerKey
    /// What the transaction has read and written so far.
    var contents: Contents

    /// A live item that holds a path, as the claim rules see it.
    struct LiveItem: Sendable {
        var id: String
        var path: String
        var kind: String
    }

    /// A folder above live items: its spelling and how many live items are beneath it.
    struct Folder: Sendable {
        var path: String
        var count: Int64
    }

    /// A version row: the item it belongs to and its record.
    struct VersionRow: Sendable {
        var item: ItemID
        var record: VersionRecord
    }

    struct Contents: Sendable {
        var state: ContainerState
        /// Items of the container by id, as changed so far (`nil`: there is no such item).
        var items: [ItemID: StoredItem?] = [:]
        /// Versions of the account by id (`nil`: there is none).
        var versions: [VersionID: VersionRow?] = [:]
        /// The live item holding each path key (`nil`: none does).
        var livePaths: [String: LiveItem?] = [:]
        /// The folder at each path key (`nil`: there is none).
        var folders: [String: Folder?] = [:]
        /// Chunks the account is known to have.
        var presentChunks: Set<ChunkHash> = []
        var accountLocked = false

        /// Items to write, in the order they were first changed.
        var changedItems: [ItemID] = []
        /// Versions to write, and the chunks each new one uses.
        var writtenVersions: [VersionID: [String]] = [:]
        /// Versions to delete, and the chunks each used (forgotten at the flush if no version uses them any more).
        var removedVersions: [VersionID: [String]] = [:]
        var changedFolders: Set<String> = []
        /// Items a version was committed to, or that were deleted: their drafts end.
        var endedDrafts: Set<ItemID> = []
        /// The feed entries to append, after ``ContainerState/feedSequence`` as it was when the container was locked.
        var feed: [String] = []
        var lockedFeedSequence: Int64
    }

    /// Takes the container's lock (making its row on first use), and with `lockingAccount` the account's too, after
    /// the container's, in the same statement; then reads at once what the operations of `keys` will ask about
    /// (``prefetch(_:)``).
    ///
    /// The lock goes without waiting for its answer, and the lookup right behind it: a connection runs statements in
    /// the order sent, so the lookup starts once the locks are held, and each statement of a `READ COMMITTED`
    /// transaction sees what was committed before it started. The connection sends each statement once the one
    /// before is answered, on its own event loop; this task waits once for both rather than being woken for each. A
    /// row the lookup cannot read (one a newer build wrote, say) is left to each operation, which reads its own keys,
    /// so only those that need that row fail.
    init(
        locking container: ContainerKey, lockingAccount: Bool, prefetching keys: [ItemWorkKeys],
        in db: PostgresTransaction
    )
        async throws
    {
        self.db = db
        self.container = container
        let locked = db.send(ContainerLockStatement.query(container, lockingAccount: lockingAccount))
        // The state is filled in from the lock's answer below; the lookup does not read it.
        contents = Contents(state: .empty, accountLocked: lockingAccount, lockedFeedSequence: 0)
        var lookupFailure: (any Error)?
        do {
            try await prefetch(keys)
        } catch {
            lookupFailure = error
        }
        // A failed lock fails the lookup behind it too; the lock's error is the one that says why.
        let answer: PostgresQueryResult
        do {
            answer = try await locked.get()
        } catch {
            // The lookup went into the transaction the lock's failure aborted. Had it not been prepared on this
            // connection yet, its preparation failed with it, and the connection would answer every later use of
            // the statement with that failure: the connection is closed, and the pool opens another.
            if lookupFailure != nil { try? await db.connection.close() }
            throw error
        }
        if let lookupFailure, lookupFailure is PSQLError { throw lookupFailure }
        guard let (epoch, feed, keyValues, _, _) = try answer.rows.first?.decode(ContainerLockStatement.Row.self) else {
            throw ProtocolError(.internalError, "container \(container.container) could not be locked")
        }
        contents.state = ContainerState(epoch: epoch, feedSequence: feed, keyValueSequence: keyValues)
        contents.lockedFeedSequence = feed
    }

    private var account: String { container.account.string }
    private var containerID: String { container.container.string }

    // MARK: Reading

    /// Reads at once what the operations of `keys` will ask about: their items and versions, the account's chunks
    /// among theirs (when the account is locked), and the items and folders at their paths and those paths'
    /// ancestors.
    func prefetch(_ keys: [ItemWorkKeys]) async throws {
        let paths = Set(keys.flatMap(\.paths))
        try await load(
            items: keys.flatMap(\.items), versions: keys.flatMap(\.versions),
            chunks: contents.accountLocked ? keys.flatMap(\.chunks) : [],
            pathKeys: paths.flatMap { [$0.collisionKey] + $0.ancestors.map(\.collisionKey) })
    }

    /// The item `id`, as this transaction has it.
    func item(_ id: ItemID) async throws -> StoredItem? {
        if let known = contents.items[id] { return known }
        try await load(items: [id])
        return contents.items[id] ?? nil
    }

    /// The version `id` of the account, whichever item it belongs to.
    func version(_ id: VersionID) async throws -> VersionRow? {
        if let known = contents.versions[id] { return known }
        try await load(versions: [id])
        return contents.versions[id] ?? nil
    }

    /// Which of `hashes` the account lacks, each once, in the order given. Takes the account's lock first (after
    /// the container's): chunk records change only under it, so none of these is forgotten before this commits.
    func missing(_ hashes: [ChunkHash]) async throws -> [ChunkHash] {
        var seen: Set<ChunkHash> = []
        let unique = hashes.filter { seen.insert($0).inserted }
        let unknown = unique.filter { !contents.presentChunks.contains($0) }
        guard !unknown.isEmpty else { return [] }
        try await lockAccount()
        try await load(chunks: unknown)
        return unique.filter { !contents.presentChunks.contains($0) }
    }

    /// Takes the account's row lock, once per transaction.
    func lockAccount() async throws {
        guard !contents.accountLocked else { return }
        _ = try await db.value("SELECT 1 FROM account WHERE id = \(account) FOR UPDATE", as: Int.self)
        contents.accountLocked = true
    }

    /// The live item holding `pathKey`, if any.
    func liveItem(at pathKey: String) async throws -> LiveItem? {
        if contents.livePaths[pathKey] == nil { try await load(pathKeys: [pathKey]) }
        return contents.livePaths[pathKey] ?? nil
    }

    /// The folder at `pathKey`, if any.
    func folder(at pathKey: String) async throws -> Folder? {
        if contents.folders[pathKey] == nil { try await load(pathKeys: [pathKey]) }
        return contents.folders[pathKey] ?? nil
    }

    /// Reads, in one statement, those of the given keys this transaction does not hold yet, and holds them.
    private func load(
        items: [ItemID] = [], versions: [VersionID] = [], chunks: [ChunkHash] = [], pathKeys: [String] = []
    ) async throws {
        let items = Array(Set(items).filter { contents.items[$0] == nil })
        let versions = Array(Set(versions).filter { contents.versions[$0] == nil })
        let chunks = Array(Set(chunks).subtracting(contents.presentChunks))
        let pathKeys = Array(Set(pathKeys).filter { contents.livePaths[$0] == nil || contents.folders[$0] == nil })
        let found = try await Self.lookup(
            items: items, versions: versions, chunks: chunks, pathKeys: pathKeys, in: container, db: db)
        for id in items { contents.items[id] = .some(found.items[id]) }
        for item in found.items.values {
            for version in item.versions.versions.values where contents.versions[version.id] == nil {
                contents.versions[version.id] = VersionRow(item: item.record.id, record: version)
            }
        }
        for id in versions where contents.versions[id] == nil { contents.versions[id] = .some(found.versions[id]) }
        contents.presentChunks.formUnion(found.chunks)
        for key in pathKeys {
            if contents.livePaths[key] == nil { contents.livePaths[key] = .some(found.livePaths[key]) }
            if contents.folders[key] == nil { contents.folders[key] = .some(found.folders[key]) }
        }
    }

    /// What ``lookup(items:versions:chunks:pathKeys:in:db:)`` found.
    struct Found {
        var items: [ItemID: StoredItem] = [:]
        var versions: [VersionID: VersionRow] = [:]
        var chunks: Set<ChunkHash> = []
        var livePaths: [String: LiveItem] = [:]
        var folders: [String: Folder] = [:]
    }

    /// The container's items (with their versions) among `items`, the account's versions among `versions` and chunks
    /// among `chunks`, and the live items and folders at `pathKeys`, in one statement and one round trip
    /// (``ItemLookupStatement``).
    static func lookup(
        items: [ItemID] = [], versions: [VersionID] = [], chunks: [ChunkHash] = [], pathKeys: [String] = [],
        in container: ContainerKey, db: PostgresTransaction
    ) async throws -> Found {
        var found = Found()
        guard !(items.isEmpty && versions.isEmpty && chunks.isEmpty && pathKeys.isEmpty) else { return found }
        let rows = try await db.execute(
            ItemLookupStatement(
                container: container, items: items.map(\.string), versions: versions.map(\.string),
                chunks: chunks.map(\.string), pathKeys: pathKeys))
        for (tag, first, second, third, fourth, flag, count, list) in rows {
            switch tag {
            case "i":
                let record = try PostgresMetadataStore.record(from: (first, second, third, fourth, flag))
                let versions = try list.map { try StoredForm.decode(VersionRecord.self, $0) }
                found.items[record.id] = StoredItem(
                    record: record,
                    versions: ItemVersions(
                        itemID: record.id, versions: versions, current: record.currentVersion,
                        isDeleted: record.isDeleted))
            case "v":
                found.versions[try VersionID(first)] = VersionRow(
                    item: try ItemID(second), record: try StoredForm.decode(VersionRecord.self, third))
            case "c": found.chunks.insert(try ChunkHash(first))
            case "l": found.livePaths[first] = LiveItem(id: second, path: third, kind: fourth ?? "")
            default: found.folders[first] = Folder(path: second, count: count)
            }
        }
        return found
    }

    // MARK: Writing

    /// Records the item's new state (its row and its versions: `before` is the state it was read in).
    func save(_ item: StoredItem, before: StoredItem?) async throws {
        let id = item.record.id
        if !contents.changedItems.contains(id) { contents.changedItems.append(id) }
        contents.items[id] = .some(item)
        if let before, !before.record.isDeleted { contents.livePaths[before.record.path.collisionKey] = .some(nil) }
        if !item.record.isDeleted {
            contents.livePaths[item.record.path.collisionKey] = LiveItem(
                id: id.string, path: item.record.path.string, kind: item.record.kind.rawValue)
        }
        let old = before?.versions.versions ?? [:]
        if item.record.isDeleted || item.versions.versions.keys.contains(where: { old[$0] == nil }) {
            contents.endedDrafts.insert(id)
        }
        for (versionID, version) in item.versions.versions where old[versionID] != version {
            let isNew = old[versionID] == nil
            contents.versions[versionID] = VersionRow(item: id, record: version)
            let hashes = isNew ? Array(Set(version.manifest.chunks.map(\.hash.string))) : []
            contents.writtenVersions[versionID] = isNew ? hashes : (contents.writtenVersions[versionID] ?? [])
        }
        for (versionID, version) in old where item.versions.versions[versionID] == nil {
            try await lockAccount()
            contents.versions[versionID] = .some(nil)
            contents.writtenVersions[versionID] = nil
            contents.removedVersions[versionID, default: []] += Set(version.manifest.chunks.map(\.hash.string))
        }
    }

    /// Reads the live items and folders at `paths` not held yet, in one statement (rather than a statement each as
    /// they are asked about).
    func hold(_ paths: [ItemPath]) async throws {
        try await load(pathKeys: paths.map(\.collisionKey))
    }

    /// Adds one live item beneath each of `ancestors` (creating the folders that are new).
    func addToFolders(_ ancestors: [ItemPath]) async throws {
        try await hold(ancestors)
        for ancestor in ancestors {
            let key = ancestor.collisionKey
            let folder = try await folder(at: key)
            contents.folders[key] = Folder(path: folder?.path ?? ancestor.string, count: (folder?.count ?? 0) + 1)
            contents.changedFolders.insert(key)
        }
    }

    /// Takes one live item from beneath each of `ancestors` (removing the folders left empty).
    func removeFromFolders(_ ancestors: [ItemPath]) async throws {
        try await hold(ancestors)
        for ancestor in ancestors {
            let key = ancestor.collisionKey
            guard let folder = try await folder(at: key) else { continue }
            contents.folders[key] = folder.count > 1 ? Folder(path: folder.path, count: folder.count - 1) : .some(nil)
            contents.changedFolders.insert(key)
        }
    }

    /// Appends `changes` to the container's feed; returns the token after them.
    func append(_ changes: [Change]) throws -> ChangeToken {
        contents.feed += try changes.map { try StoredForm.encode($0) }
        contents.state.feedSequence += Int64(changes.count)
        return FeedToken(feed: .changes, epoch: contents.state.epoch, sequence: contents.state.feedSequence).token
    }

    /// Sends every write the transaction kept: the versions it removed, then everything else in one statement
    /// (a data-modifying `WITH` per table), then the forgetting of chunks no version uses any more, which must see
    /// the references the statement before added.
    func flush() async throws {
        let removed = contents.removedVersions
        if !removed.isEmpty {
            let ids = removed.keys.map(\.string)
            try await db.run(
                """
                WITH gone AS (DELETE FROM version WHERE account_id = \(account) AND version_id = ANY(\(ids)))
                DELETE FROM version_chunk WHERE account_id = \(account) AND version_id = ANY(\(ids))
                """)
        }
        var writes = ItemWriteStatement(container: container)
        addItems(to: &writes)
        try addVersions(to: &writes)
        addFolders(to: &writes)
        writes.endedDrafts = contents.endedDrafts.map(\.string)
        writes.feedBefore = contents.lockedFeedSequence
        writes.feedAfter = contents.state.feedSequence
        writes.changes = contents.feed
        if !writes.isEmpty { _ = try await db.execute(writes) }
        if !removed.isEmpty { try await forgetUnused(Set(removed.values.joined())) }
    }

    private func addItems(to writes: inout ItemWriteStatement) {
        for id in contents.changedItems {
            guard let record = (contents.items[id] ?? nil)?.record else { continue }
            writes.items.ids.append(record.id.string)
            writes.items.paths.append(record.path.string)
            writes.items.pathKeys.append(record.path.collisionKey)
            writes.items.kinds.append(record.kind.rawValue)
            writes.items.currentVersions.append(record.currentVersion?.string ?? "")
            writes.items.isDeleted.append(record.isDeleted)
        }
    }

    private func addVersions(to writes: inout ItemWriteStatement) throws {
        for (id, chunks) in contents.writtenVersions {
            guard let row = contents.versions[id] ?? nil else { continue }
            writes.versions.ids.append(id.string)
            writes.versions.items.append(row.item.string)
            writes.versions.records.append(try StoredForm.encode(row.record))
            writes.versions.referencing += Array(repeating: id.string, count: chunks.count)
            writes.versions.hashes += chunks
        }
    }

    private func addFolders(to writes: inout ItemWriteStatement) {
        for key in contents.changedFolders {
            if let folder = contents.folders[key] ?? nil {
                writes.folders.pathKeys.append(key)
                writes.folders.paths.append(folder.path)
                writes.folders.counts.append(folder.count)
            } else {
                writes.emptiedFolders.append(key)
            }
        }
    }

    /// Forgets the chunks among `hashes` that no version uses any more; they stop counting against the quota (a
    /// later upload of the same bytes stores them again). The account's lock is held.
    private func forgetUnused(_ hashes: Set<String>) async throws {
        guard !hashes.isEmpty else { return }
        let freed =
            try await db.value(
                """
                WITH unused AS (
                    DELETE FROM chunk WHERE account_id = \(account) AND hash = ANY(\(Array(hashes)))
                        AND NOT EXISTS (
                            SELECT 1 FROM version_chunk
                            WHERE version_chunk.account_id = chunk.account_id AND version_chunk.hash = chunk.hash)
                    RETURNING size)
                SELECT coalesce(sum(size), 0)::BIGINT FROM unused
                """, as: Int64.self) ?? 0
        if freed > 0 {
            try await db.run("UPDATE account SET used_bytes = used_bytes - \(freed) WHERE id = \(account)")
        }
    }
}

/// What an item operation will read, so that a transaction of many reads it together first.
struct ItemWorkKeys: Sendable {
    var items: [ItemID] = []
    var versions: [VersionID] = []
    var chunks: [ChunkHash] = []
    var paths: [ItemPath] = []

    init(items: [ItemID] = [], versions: [VersionID] = [], chunks: [ChunkHash] = [], paths: [ItemPath] = []) {
        self.items = items
        self.versions = versions
        self.chunks = chunks
        self.paths = paths
    }

    /// The keys of creating the item `request` describes.
    init(_ request: CreateItemRequest) {
        self.init(
            items: [request.id], versions: request.version.map { [$0.id] } ?? [],
            chunks: request.version?.manifest.chunks.map(\.hash) ?? [], paths: [request.path])
    }

    /// The keys of committing `payload`.
    init(_ payload: VersionPayload) {
        var chunks: [ChunkHash] = []
        if case .whole(let manifest) = payload.content { chunks = manifest.chunks.map(\.hash) }
        self.init(items: [payload.itemID], versions: [payload.id], chunks: chunks)
    }

    /// The keys of a batch of operations.
    init(_ operations: [ItemBatchOperation]) {
        self.init()
        for operation in operations {
            let keys =
                switch operation {
                case .create(let request): ItemWorkKeys(request)
                case .commit(let payload): ItemWorkKeys(payload)
                }
            items += keys.items
            versions += keys.versions
            chunks += keys.chunks
            paths += keys.paths
        }
    }
}
