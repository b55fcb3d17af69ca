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

    /// Takes the container's lock (making its row on first use) and starts the work on it; with `lockingAccount`,
    /// the account's lock too, after the container's, in the same statement.
    init(locking container: ContainerKey, lockingAccount: Bool, in db: PostgresTransaction) async throws {
        self.db = db
        self.container = container
        let state: ContainerState
        if lockingAccount {
            let (account, containerID) = (container.account.string, container.container.string)
            guard
                let (epoch, feed, keyValues, _) = try await db.row(
                    """
                    WITH account_lock AS (SELECT id FROM account WHERE id = \(account) FOR UPDATE)
                    INSERT INTO container (account_id, container_id, epoch)
                    VALUES (\(account), \(containerID), \(StoredForm.newEpoch()))
                    ON CONFLICT (account_id, container_id) DO UPDATE SET epoch = container.epoch
                    RETURNING epoch, feed_sequence, kv_sequence, (SELECT count(*) FROM account_lock)
                    """, as: (String, Int64, Int64, Int64).self)
            else { throw ProtocolError(.internalError, "container \(container.container) could not be locked") }
            state = ContainerState(epoch: epoch, feedSequence: feed, keyValueSequence: keyValues)
        } else {
            state = try await PostgresMetadataStore.lockContainer(container, in: db)
        }
        contents = Contents(state: state, accountLocked: lockingAccount, lockedFeedSequence: state.feedSequence)
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
    /// among `chunks`, and the live items and folders at `pathKeys`, in one statement and one round trip.
    ///
    /// Each key is looked up on its own (`unnest` of the keys, then a lateral subquery the planner cannot flatten):
    /// with `key = ANY(keys)`, a table that grew since it was last analysed is estimated at a row or two per
    /// container, and the planner filters every row of the container instead of looking the keys up in the index.
    static func lookup(
        items: [ItemID] = [], versions: [VersionID] = [], chunks: [ChunkHash] = [], pathKeys: [String] = [],
        in container: ContainerKey, db: PostgresTransaction
    ) async throws -> Found {
        var statement = Statement(account: container.account.string, container: container.container.string)
        var parts: [String] = []
        if !items.isEmpty {
            parts.append(
                """
                SELECT 'i', item.item_id, item.path, item.kind, item.current_version, item.is_deleted, 0::BIGINT, (
                    SELECT coalesce(array_agg(record), '{}') FROM version
                    WHERE version.account_id = item.account_id AND version.container_id = item.container_id
                        AND version.item_id = item.item_id)
                FROM unnest(\(statement.bind(items.map(\.string)))) AS wanted(key) CROSS JOIN LATERAL (
                    SELECT * FROM item WHERE account_id = $1 AND container_id = $2 AND item_id = wanted.key OFFSET 0)
                    AS item
                """)
        }
        if !versions.isEmpty {
            parts.append(
                """
                SELECT 'v', found.version_id, found.item_id, found.record, NULL, false, 0, '{}'
                FROM unnest(\(statement.bind(versions.map(\.string)))) AS wanted(key) CROSS JOIN LATERAL (
                    SELECT version_id, item_id, record FROM version
                    WHERE account_id = $1 AND version_id = wanted.key OFFSET 0) AS found
                """)
        }
        if !chunks.isEmpty {
            parts.append(
                """
                SELECT 'c', found.hash, '', '', NULL, false, 0, '{}'
                FROM unnest(\(statement.bind(chunks.map(\.string)))) AS wanted(key) CROSS JOIN LATERAL (
                    SELECT hash FROM chunk WHERE account_id = $1 AND hash = wanted.key OFFSET 0) AS found
                """)
        }
        if !pathKeys.isEmpty {
            let keys = statement.bind(pathKeys)
            parts.append(
                """
                SELECT 'l', found.path_key, found.item_id, found.path, found.kind, false, 0, '{}'
                FROM unnest(\(keys)) AS wanted(key) CROSS JOIN LATERAL (
                    SELECT path_key, item_id, path, kind FROM item
                    WHERE account_id = $1 AND container_id = $2 AND path_key = wanted.key AND NOT is_deleted
                    OFFSET 0) AS found
                UNION ALL
                SELECT 'f', found.path_key, found.path, '', NULL, false, found.item_count, '{}'
                FROM unnest(\(keys)) AS wanted(key) CROSS JOIN LATERAL (
                    SELECT path_key, path, item_count FROM folder
                    WHERE account_id = $1 AND container_id = $2 AND path_key = wanted.key OFFSET 0) AS found
                """)
        }
        var found = Found()
        guard !parts.isEmpty else { return found }
        // The first part names the columns' types; the others' literals take them.
        let header =
            "SELECT NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::TEXT, NULL::BOOL, NULL::BIGINT, "
            + "NULL::TEXT[] WHERE false"
        let query = statement.query(([header] + parts).joined(separator: "\nUNION ALL\n"))
        let rows = try await db.rows(query, as: (String, String, String, String, String?, Bool, Int64, [String]).self)
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
        var statement = Statement(account: account, container: containerID)
        try addItems(to: &statement)
        try addVersions(to: &statement)
        addFolders(to: &statement)
        if !contents.endedDrafts.isEmpty {
            let items = statement.bind(contents.endedDrafts.map(\.string))
            statement.add("DELETE FROM draft WHERE account_id = $1 AND container_id = $2 AND item_id = ANY(\(items))")
            statement.add(
                "DELETE FROM draft_chunk WHERE account_id = $1 AND container_id = $2 AND item_id = ANY(\(items))")
        }
        if !contents.feed.isEmpty {
            statement.add(
                """
                INSERT INTO change (account_id, container_id, sequence, body)
                SELECT $1, $2, \(statement.bind(contents.lockedFeedSequence)) + ordinality, body
                FROM unnest(\(statement.bind(contents.feed))) WITH ORDINALITY AS entry(body, ordinality)
                """)
            statement.add(
                """
                UPDATE container SET feed_sequence = \(statement.bind(contents.state.feedSequence))
                WHERE account_id = $1 AND container_id = $2
                """)
        }
        if let query = statement.writes { try await db.run(query) }
        if !removed.isEmpty { try await forgetUnused(Set(removed.values.joined())) }
    }

    private func addItems(to statement: inout Statement) throws {
        let records = contents.changedItems.compactMap { contents.items[$0] ?? nil }.map(\.record)
        guard !records.isEmpty else { return }
        statement.add(
            """
            INSERT INTO item (account_id, container_id, item_id, path, path_key, kind, current_version, is_deleted)
            SELECT $1, $2, id, path, path_key, kind, nullif(current_version, ''), is_deleted
            FROM unnest(\(statement.bind(records.map(\.id.string))), \(statement.bind(records.map(\.path.string))), \
            \(statement.bind(records.map(\.path.collisionKey))), \(statement.bind(records.map(\.kind.rawValue))), \
            \(statement.bind(records.map { $0.currentVersion?.string ?? "" })), \(statement.bind(records.map(\.isDeleted))))
                AS entry(id, path, path_key, kind, current_version, is_deleted)
            ON CONFLICT (account_id, container_id, item_id) DO UPDATE SET path = excluded.path,
                path_key = excluded.path_key, kind = excluded.kind, current_version = excluded.current_version,
                is_deleted = excluded.is_deleted
            """)
    }

    private func addVersions(to statement: inout Statement) throws {
        var ids: [String] = []
        var items: [String] = []
        var records: [String] = []
        var referencing: [String] = []
        var hashes: [String] = []
        for (id, chunks) in contents.writtenVersions {
            guard let row = contents.versions[id] ?? nil else { continue }
            ids.append(id.string)
            items.append(row.item.string)
            records.append(try StoredForm.encode(row.record))
            referencing += Array(repeating: id.string, count: chunks.count)
            hashes += chunks
        }
        guard !ids.isEmpty else { return }
        statement.add(
            """
            INSERT INTO version (account_id, version_id, container_id, item_id, record)
            SELECT $1, id, $2, item, record
            FROM unnest(\(statement.bind(ids)), \(statement.bind(items)), \(statement.bind(records)))
                AS entry(id, item, record)
            ON CONFLICT (account_id, version_id) DO UPDATE SET record = excluded.record
            """)
        guard !hashes.isEmpty else { return }
        statement.add(
            """
            INSERT INTO version_chunk (account_id, version_id, hash)
            SELECT $1, id, hash FROM unnest(\(statement.bind(referencing)), \(statement.bind(hashes))) AS entry(id, hash)
            ON CONFLICT DO NOTHING
            """)
    }

    private func addFolders(to statement: inout Statement) {
        var kept: [(key: String, folder: Folder)] = []
        var gone: [String] = []
        for key in contents.changedFolders {
            if let folder = contents.folders[key] ?? nil { kept.append((key, folder)) } else { gone.append(key) }
        }
        if !gone.isEmpty {
            statement.add(
                "DELETE FROM folder WHERE account_id = $1 AND container_id = $2 AND path_key = ANY(\(statement.bind(gone)))"
            )
        }
        guard !kept.isEmpty else { return }
        statement.add(
            """
            INSERT INTO folder (account_id, container_id, path_key, path, item_count)
            SELECT $1, $2, path_key, path, item_count
            FROM unnest(\(statement.bind(kept.map(\.key))), \(statement.bind(kept.map(\.folder.path))), \
            \(statement.bind(kept.map(\.folder.count)))) AS entry(path_key, path, item_count)
            ON CONFLICT (account_id, container_id, path_key) DO UPDATE SET path = excluded.path,
                item_count = excluded.item_count
            """)
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

/// A statement built in parts, its parameters numbered as they are bound; the account and container are `$1` and
/// `$2`.
private struct Statement {
    private var parts: [String] = []
    private var bindings = PostgresBindings()

    init(account: String, container: String) {
        bindings.append(account)
        bindings.append(container)
    }

    /// Adds `value` to the statement's parameters; returns its placeholder.
    mutating func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value) -> String {
        bindings.append(value)
        return "$\(bindings.count)"
    }

    /// Adds a write, for ``writes``.
    mutating func add(_ sql: String) { parts.append(sql) }

    /// The writes added, as one statement (each a data-modifying `WITH`, which PostgreSQL runs whether or not the
    /// statement reads it), or `nil` when none was added.
    var writes: PostgresQuery? {
        guard !parts.isEmpty else { return nil }
        let writes = parts.enumerated().map { "write\($0.offset) AS (\($0.element))" }.joined(separator: ",\n")
        return query("WITH \(writes)\nSELECT 1")
    }

    /// `sql` with the parameters bound.
    func query(_ sql: String) -> PostgresQuery { PostgresQuery(unsafeSQL: sql, binds: bindings) }
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
