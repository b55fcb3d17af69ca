import Foundation
import GRDB
import SQLiteSupport
import UbiquityProtocol

extension SQLiteMetadataStore {
    public func createItem(_ request: CreateItemRequest, in container: ContainerKey) async throws -> ItemResponse {
        if let version = request.version {
            try version.check(fits: request.kind, of: request.id)
        }
        let now = clock()
        let retention = retention
        return try await committer.write { db in
            try Self.createItem(request, in: container, db: db, retention: retention, now: now)
        }
    }

    public func commit(_ version: VersionPayload, in container: ContainerKey) async throws -> ItemResponse {
        let now = clock()
        let retention = retention
        return try await committer.write { db in
            try Self.commit(version, in: container, db: db, retention: retention, now: now)
        }
    }

    /// Applies the operations in order in one transaction (shared with other callers' through the group committer),
    /// each in a savepoint of its own: a refused one is rolled back alone. A failure of the store fails the whole
    /// batch.
    public func applyItemBatch(_ operations: [ItemBatchOperation], in container: ContainerKey) async throws
        -> [Result<ItemResponse, ProtocolError>]
    {
        let now = clock()
        let retention = retention
        return try await committer.write { db in
            try Self.apply(operations, in: container, db: db, retention: retention, now: now)
        }
    }

    /// Records the chunks and applies the operations in one transaction.
    public func applyItemBatch(
        _ operations: [ItemBatchOperation], addingChunks chunks: [ChunkReference], in container: ContainerKey
    ) async throws -> (chunks: [ChunkAddition], results: [Result<ItemResponse, ProtocolError>]) {
        let now = clock()
        let retention = retention
        return try await committer.write { db in
            let added = try Self.add(chunks, to: container.account, in: db)
            return (added, try Self.apply(operations, in: container, db: db, retention: retention, now: now))
        }
    }

    /// Applies `operations` in `db`'s transaction, each in a savepoint of its own.
    private static func apply(
        _ operations: [ItemBatchOperation], in container: ContainerKey, db: Database, retention: VersionRetention,
        now: Date
    ) throws -> [Result<ItemResponse, ProtocolError>] {
        try operations.map { operation -> Result<ItemResponse, ProtocolError> in
            do {
                return .success(
                    try db.inPreparedSavepoint {
                        switch operation {
                        case .create(let request):
                            if let version = request.version {
                                try version.check(fits: request.kind, of: request.id)
                            }
                            return try createItem(request, in: container, db: db, retention: retention, now: now)
                        case .commit(let version):
                            return try commit(version, in: container, db: db, retention: retention, now: now)
                        }
                    })
            } catch let error as ProtocolError {
                return .failure(error)
            }
        }
    }

    private static func commit(
        _ payload: VersionPayload, in container: ContainerKey, db: Database, retention: VersionRetention, now: Date
    ) throws -> ItemResponse {
        let item = try loadExisting(payload.itemID, in: container, db: db)
        let version = try payload.resolved { item.versions.versions[$0]?.manifest }
        try version.check(fits: item.record.kind, of: item.record.id)
        var response = try commit(version, to: item, in: container, db: db, retention: retention, now: now)
        if payload.deltaBase != nil, response.version?.id == version.id { response.version = nil }
        return response
    }

    private static func createItem(
        _ request: CreateItemRequest, in container: ContainerKey, db: Database, retention: VersionRetention, now: Date
    ) throws -> ItemResponse {
        if let existing = try Self.load(request.id, in: container, db: db) {
            guard existing.record.path == request.path, existing.record.kind == request.kind else {
                throw ProtocolError(
                    .itemExists,
                    "item \(request.id) exists already, at \(existing.record.path) as a "
                        + "\(existing.record.kind.rawValue)")
            }
            guard let version = request.version else {
                return ItemResponse(item: existing.record, token: try Self.feedToken(container, in: db))
            }
            return try Self.commit(version, to: existing, in: container, db: db, retention: retention, now: now)
        }
        let record = ItemRecord(id: request.id, path: request.path, kind: request.kind)
        var item = StoredItem(record: record, versions: ItemVersions(itemID: request.id))
        var change = ItemChange(changes: [.itemCreated(itemID: request.id, path: request.path, kind: request.kind)])
        if let version = request.version {
            let committed = try Self.apply(
                version, to: &item, in: container, db: db, retention: retention, now: now)
            change.changes += committed.changes
            change.outcome = committed.outcome
            change.version = committed.version
        }
        return try Self.save(item, before: nil, change: change, in: container, db: db)
    }

    public func moveItem(_ id: ItemID, to path: ItemPath, in container: ContainerKey) async throws -> ItemResponse {
        try await update(id, in: container) { item in
            guard !item.versions.isDeleted else { throw ProtocolError(.itemDeleted, "\(id) is deleted") }
            let from = item.record.path
            guard from != path else { return ItemChange(changes: []) }
            item.record.path = path
            return ItemChange(changes: [.itemMoved(itemID: id, from: from, to: path)])
        }
    }

    public func deleteItem(_ id: ItemID, basedOn: VersionID?, in container: ContainerKey) async throws -> ItemResponse {
        try await update(id, in: container) { item in ItemChange(changes: try item.versions.delete(basedOn: basedOn)) }
    }

    public func markResolved(_ version: VersionID, of item: ItemID, in container: ContainerKey) async throws
        -> ItemResponse
    {
        try await update(item, in: container) { item in ItemChange(changes: try item.versions.markResolved(version)) }
    }

    public func removeVersion(_ version: VersionID, of item: ItemID, in container: ContainerKey) async throws
        -> ItemResponse
    {
        try await update(item, in: container) { item in ItemChange(changes: try item.versions.remove(version)) }
    }

    public func replaceCurrent(with version: VersionID, of item: ItemID, in container: ContainerKey) async throws
        -> ItemResponse
    {
        let now = clock()
        let retention = retention
        return try await update(item, in: container) { item in
            var changes = try item.versions.replace(with: version)
            changes += item.versions.prune(retention, now: now)
            return ItemChange(changes: changes)
        }
    }

    public func item(_ id: ItemID, in container: ContainerKey) async throws -> ItemDetail? {
        try await pool.read { db in
            guard let item = try Self.load(id, in: container, db: db) else { return nil }
            let versions = item.versions.versions.values.sorted { VersionRecord.precedes($1, $0) }
            return ItemDetail(item: item.record, versions: versions)
        }
    }

    public func items(in container: ContainerKey) async throws -> ItemListResponse {
        try await pool.read { db in
            let rows = try db.fetchRows(
                sql: "SELECT * FROM item WHERE account_id = ? AND container_id = ? ORDER BY path, item_id",
                arguments: [container.account.string, container.container.string])
            return ItemListResponse(
                items: try rows.map(Self.record(from:)), token: try Self.feedToken(container, in: db))
        }
    }

    // MARK: Transactions

    /// Runs `body` on the stored item in one write transaction and saves the result.
    private func update(
        _ id: ItemID, in container: ContainerKey, _ body: @escaping @Sendable (inout StoredItem) throws -> ItemChange
    ) async throws -> ItemResponse {
        try await committer.write { db in
            let before = try Self.loadExisting(id, in: container, db: db)
            var item = before
            let change = try body(&item)
            return try Self.save(item, before: before, change: change, in: container, db: db)
        }
    }

    private static func commit(
        _ version: VersionRecord, to stored: StoredItem, in container: ContainerKey, db: Database,
        retention: VersionRetention, now: Date
    ) throws -> ItemResponse {
        var item = stored
        let change = try apply(version, to: &item, in: container, db: db, retention: retention, now: now)
        return try save(item, before: stored, change: change, in: container, db: db)
    }

    /// Commits `version` to `item` (in memory) after checking its id is new and its chunks are all stored.
    private static func apply(
        _ version: VersionRecord, to item: inout StoredItem, in container: ContainerKey, db: Database,
        retention: VersionRetention, now: Date
    ) throws -> ItemChange {
        var version = version
        version.modificationDate = date(microseconds(version.modificationDate))  // as the wire and the table hold it
        if let row = try db.fetchRow(
            sql: "SELECT item_id, record FROM version WHERE account_id = ? AND version_id = ?",
            arguments: [container.account.string, version.id.string])
        {
            let existing = try decode(VersionRecord.self, row["record"])
            guard row["item_id"] == version.itemID.string, existing.contentHash == version.contentHash else {
                throw ProtocolError(.versionExists, "version \(version.id) exists already with other content")
            }
            return ItemChange(changes: [], outcome: .identical, version: existing)
        }
        let missing = try Self.missing(version.manifest.chunks.map(\.hash), of: container.account, in: db)
        guard missing.isEmpty else {
            throw ProtocolError(
                .chunksMissing, "\(missing.count) chunk(s) of version \(version.id) have not been uploaded",
                missingChunks: missing)
        }
        var (outcome, changes) = item.versions.commit(version)
        switch outcome {
        case .becameCurrent(let id):
            changes += item.versions.prune(retention, now: now)
            return ItemChange(changes: changes, outcome: .current, version: item.versions.versions[id])
        case .keptAsConflict(let id, _):
            return ItemChange(changes: changes, outcome: .conflict, version: item.versions.versions[id])
        case .identical(let existing):
            return ItemChange(changes: changes, outcome: .identical, version: item.versions.versions[existing])
        }
    }

    /// Writes the item's new state (paths, row, versions) and appends its changes to the feed.
    private static func save(
        _ item: StoredItem, before: StoredItem?, change: ItemChange, in container: ContainerKey, db: Database
    ) throws -> ItemResponse {
        var record = item.record
        record.currentVersion = item.versions.current
        record.isDeleted = item.versions.isDeleted
        let wasLive = before.map { !$0.record.isDeleted } ?? false
        let moved = before?.record.path != record.path
        if wasLive, let before, record.isDeleted || moved {
            try release(before.record.path, in: container, db: db)
        }
        if !record.isDeleted, !wasLive || moved {
            try claim(record.path, kind: record.kind, for: record.id, in: container, db: db)
        }
        try db.run(
            sql: """
                INSERT OR REPLACE INTO item
                    (account_id, container_id, item_id, path, path_key, kind, current_version, is_deleted)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                container.account.string, container.container.string, record.id.string, record.path.string,
                record.path.collisionKey, record.kind.rawValue, record.currentVersion?.string, record.isDeleted,
            ])
        let old = before?.versions.versions ?? [:]
        for (id, version) in item.versions.versions where old[id] != version {
            try db.run(
                sql: """
                    INSERT OR REPLACE INTO version (account_id, version_id, container_id, item_id, record)
                    VALUES (?, ?, ?, ?, ?)
                    """,
                arguments: [
                    container.account.string, id.string, container.container.string, record.id.string,
                    try encode(version),
                ])
            if old[id] == nil { try reference(version, of: container.account, db: db) }
        }
        for (id, version) in old where item.versions.versions[id] == nil {
            try db.run(
                sql: "DELETE FROM version WHERE account_id = ? AND version_id = ?",
                arguments: [container.account.string, id.string])
            try release(version, of: container.account, db: db)
        }
        let token = try append(change.changes, to: container, in: db)
        return ItemResponse(item: record, outcome: change.outcome, version: change.version, token: token)
    }

    /// Records which chunks a new version uses.
    private static func reference(_ version: VersionRecord, of account: AccountID, db: Database) throws {
        for hash in Set(version.manifest.chunks.map(\.hash)) {
            try db.run(
                sql: "INSERT OR IGNORE INTO version_chunk (account_id, version_id, hash) VALUES (?, ?, ?)",
                arguments: [account.string, version.id.string, hash.string])
        }
    }

    /// Drops a removed version's chunk references; a chunk no version uses any more stops counting against the
    /// quota and is forgotten (a later upload of the same bytes stores it again).
    private static func release(_ version: VersionRecord, of account: AccountID, db: Database) throws {
        try db.run(
            sql: "DELETE FROM version_chunk WHERE account_id = ? AND version_id = ?",
            arguments: [account.string, version.id.string])
        for hash in Set(version.manifest.chunks.map(\.hash)) {
            let used = try db.fetchOne(
                Bool.self, sql: "SELECT 1 FROM version_chunk WHERE account_id = ? AND hash = ? LIMIT 1",
                arguments: [account.string, hash.string])
            guard used == nil,
                let size = try db.fetchOne(
                    Int64.self, sql: "SELECT size FROM chunk WHERE account_id = ? AND hash = ?",
                    arguments: [account.string, hash.string])
            else { continue }
            try db.run(
                sql: "DELETE FROM chunk WHERE account_id = ? AND hash = ?", arguments: [account.string, hash.string])
            try db.run(
                sql: "UPDATE account SET used_bytes = used_bytes - ? WHERE id = ?", arguments: [size, account.string])
        }
    }

    private static func loadExisting(_ id: ItemID, in container: ContainerKey, db: Database) throws -> StoredItem {
        guard let item = try load(id, in: container, db: db) else {
            throw ProtocolError(.itemNotFound, "no item \(id) in container \(container.container)")
        }
        return item
    }

    private static func load(_ id: ItemID, in container: ContainerKey, db: Database) throws -> StoredItem? {
        let arguments: StatementArguments = [container.account.string, container.container.string, id.string]
        guard
            let row = try db.fetchRow(
                sql: "SELECT * FROM item WHERE account_id = ? AND container_id = ? AND item_id = ?",
                arguments: arguments)
        else { return nil }
        let record = try record(from: row)
        // INDEXED BY: without statistics SQLite plans this as a search on `account_id` alone, reading every version
        // of the account on every commit.
        let versions = try db.fetchAll(
            String.self,
            sql: "SELECT record FROM version INDEXED BY version_item "
                + "WHERE account_id = ? AND container_id = ? AND item_id = ?",
            arguments: arguments
        ).map { try decode(VersionRecord.self, $0) }
        return StoredItem(
            record: record,
            versions: ItemVersions(
                itemID: id, versions: versions, current: record.currentVersion, isDeleted: record.isDeleted))
    }

    static func record(from row: Row) throws -> ItemRecord {
        let current: String? = row["current_version"]
        guard let kind = ItemKind(rawValue: row["kind"]) else {
            throw ProtocolError(.internalError, "item \(row["item_id"] as String) has an unknown kind")
        }
        return ItemRecord(
            id: try ItemID(row["item_id"]), path: try ItemPath(row["path"]), kind: kind,
            currentVersion: try current.map { try VersionID($0) }, isDeleted: row["is_deleted"])
    }
}
