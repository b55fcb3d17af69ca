import Foundation
import PostgresNIO
import UbiquityProtocol

extension PostgresMetadataStore {
    public func createItem(_ request: CreateItemRequest, in container: ContainerKey) async throws -> ItemResponse {
        if let version = request.version {
            try version.check(fits: request.kind, of: request.id)
        }
        let (retention, now) = (retention, clock())
        return try await write(retryingUniqueViolations: true) { db in
            var state = try await Self.lockContainer(container, in: db)
            return try await Self.createItem(
                request, in: container, state: &state, db: db, retention: retention, now: now)
        }
    }

    public func commit(_ version: VersionPayload, in container: ContainerKey) async throws -> ItemResponse {
        let (retention, now) = (retention, clock())
        return try await write(retryingUniqueViolations: true) { db in
            var state = try await Self.lockContainer(container, in: db)
            return try await Self.commit(version, in: container, state: &state, db: db, retention: retention, now: now)
        }
    }

    /// Applies the operations in order in one transaction, each in a savepoint of its own: a refused one is rolled
    /// back alone. A failure of the store fails the whole batch.
    public func applyItemBatch(_ operations: [ItemBatchOperation], in container: ContainerKey) async throws
        -> [Result<ItemResponse, ProtocolError>]
    {
        let (retention, now) = (retention, clock())
        return try await write(retryingUniqueViolations: true) { db in
            var state = try await Self.lockContainer(container, in: db)
            var results: [Result<ItemResponse, ProtocolError>] = []
            for operation in operations {
                try await db.run("SAVEPOINT item_operation")
                let before = state
                do {
                    let response: ItemResponse
                    switch operation {
                    case .create(let request):
                        if let version = request.version { try version.check(fits: request.kind, of: request.id) }
                        response = try await Self.createItem(
                            request, in: container, state: &state, db: db, retention: retention, now: now)
                    case .commit(let version):
                        response = try await Self.commit(
                            version, in: container, state: &state, db: db, retention: retention, now: now)
                    }
                    try await db.run("RELEASE SAVEPOINT item_operation")
                    results.append(.success(response))
                } catch let error as ProtocolError {
                    try await db.run("ROLLBACK TO SAVEPOINT item_operation")
                    state = before
                    results.append(.failure(error))
                }
            }
            return results
        }
    }

    private static func commit(
        _ payload: VersionPayload, in container: ContainerKey, state: inout ContainerState, db: PostgresTransaction,
        retention: VersionRetention, now: Date
    ) async throws -> ItemResponse {
        let item = try await loadExisting(payload.itemID, in: container, db: db)
        let version = try payload.resolved { item.versions.versions[$0]?.manifest }
        try version.check(fits: item.record.kind, of: item.record.id)
        var response = try await commit(
            version, to: item, in: container, state: &state, db: db, retention: retention, now: now)
        if payload.deltaBase != nil, response.version?.id == version.id { response.version = nil }
        return response
    }

    private static func createItem(
        _ request: CreateItemRequest, in container: ContainerKey, state: inout ContainerState,
        db: PostgresTransaction, retention: VersionRetention, now: Date
    ) async throws -> ItemResponse {
        if let existing = try await load(request.id, in: container, db: db) {
            guard existing.record.path == request.path, existing.record.kind == request.kind else {
                throw ProtocolError(
                    .itemExists,
                    "item \(request.id) exists already, at \(existing.record.path) as a "
                        + "\(existing.record.kind.rawValue)")
            }
            guard let version = request.version else {
                let token = FeedToken(feed: .changes, epoch: state.epoch, sequence: state.feedSequence).token
                return ItemResponse(item: existing.record, token: token)
            }
            return try await commit(
                version, to: existing, in: container, state: &state, db: db, retention: retention, now: now)
        }
        let record = ItemRecord(id: request.id, path: request.path, kind: request.kind)
        var item = StoredItem(record: record, versions: ItemVersions(itemID: request.id))
        var change = ItemChange(changes: [.itemCreated(itemID: request.id, path: request.path, kind: request.kind)])
        if let version = request.version {
            let committed = try await apply(version, to: &item, in: container, db: db, retention: retention, now: now)
            change.changes += committed.changes
            change.outcome = committed.outcome
            change.version = committed.version
        }
        return try await save(item, before: nil, change: change, in: container, state: &state, db: db)
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
        let (retention, now) = (retention, clock())
        return try await update(item, in: container) { item in
            var changes = try item.versions.replace(with: version)
            changes += item.versions.prune(retention, now: now)
            return ItemChange(changes: changes)
        }
    }

    public func item(_ id: ItemID, in container: ContainerKey) async throws -> ItemDetail? {
        try await read { db in
            guard let item = try await Self.load(id, in: container, db: db) else { return nil }
            let versions = item.versions.versions.values.sorted { VersionRecord.precedes($1, $0) }
            return ItemDetail(item: item.record, versions: versions)
        }
    }

    public func items(in container: ContainerKey) async throws -> ItemListResponse {
        try await read { db in
            let state = try await Self.containerState(container, in: db)
            let rows = try await db.rows(
                """
                SELECT \(unescaped: Self.itemColumns) FROM item
                WHERE account_id = \(container.account.string) AND container_id = \(container.container.string)
                ORDER BY path COLLATE "C", item_id COLLATE "C"
                """, as: ItemRow.self)
            let token = FeedToken(feed: .changes, epoch: state.epoch, sequence: state.feedSequence).token
            return ItemListResponse(items: try rows.map(Self.record(from:)), token: token)
        }
    }

    // MARK: Transactions

    /// Runs `body` on the stored item in one write transaction and saves the result.
    private func update(
        _ id: ItemID, in container: ContainerKey, _ body: @escaping @Sendable (inout StoredItem) throws -> ItemChange
    ) async throws -> ItemResponse {
        try await write(retryingUniqueViolations: true) { db in
            var state = try await Self.lockContainer(container, in: db)
            let before = try await Self.loadExisting(id, in: container, db: db)
            var item = before
            let change = try body(&item)
            return try await Self.save(item, before: before, change: change, in: container, state: &state, db: db)
        }
    }

    private static func commit(
        _ version: VersionRecord, to stored: StoredItem, in container: ContainerKey, state: inout ContainerState,
        db: PostgresTransaction, retention: VersionRetention, now: Date
    ) async throws -> ItemResponse {
        var item = stored
        let change = try await apply(version, to: &item, in: container, db: db, retention: retention, now: now)
        return try await save(item, before: stored, change: change, in: container, state: &state, db: db)
    }

    /// Commits `version` to `item` (in memory) after checking its id is new and its chunks are all stored. The
    /// account's lock is taken before the chunks are looked at, so none of them is forgotten before this commits.
    private static func apply(
        _ version: VersionRecord, to item: inout StoredItem, in container: ContainerKey, db: PostgresTransaction,
        retention: VersionRetention, now: Date
    ) async throws -> ItemChange {
        var version = version
        version.modificationDate = StoredForm.date(StoredForm.microseconds(version.modificationDate))
        if let (itemID, stored) = try await db.row(
            """
            SELECT item_id, record FROM version
            WHERE account_id = \(container.account.string) AND version_id = \(version.id.string)
            """, as: (String, String).self)
        {
            let existing = try StoredForm.decode(VersionRecord.self, stored)
            guard itemID == version.itemID.string, existing.contentHash == version.contentHash else {
                throw ProtocolError(.versionExists, "version \(version.id) exists already with other content")
            }
            return ItemChange(changes: [], outcome: .identical, version: existing)
        }
        try await lockAccount(container.account, db: db)
        let missing = try await Self.missing(version.manifest.chunks.map(\.hash), of: container.account, in: db)
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

    /// Takes the account's row lock (after the container's): chunk records change only under it.
    private static func lockAccount(_ account: AccountID, db: PostgresTransaction) async throws {
        _ = try await db.value("SELECT 1 FROM account WHERE id = \(account.string) FOR UPDATE", as: Int.self)
    }

    /// Writes the item's new state (paths, row, versions) and appends its changes to the feed.
    private static func save(
        _ item: StoredItem, before: StoredItem?, change: ItemChange, in container: ContainerKey,
        state: inout ContainerState, db: PostgresTransaction
    ) async throws -> ItemResponse {
        var record = item.record
        record.currentVersion = item.versions.current
        record.isDeleted = item.versions.isDeleted
        let wasLive = before.map { !$0.record.isDeleted } ?? false
        let moved = before?.record.path != record.path
        if wasLive, let before, record.isDeleted || moved {
            try await release(before.record.path, in: container, db: db)
        }
        if !record.isDeleted, !wasLive || moved {
            try await claim(record.path, kind: record.kind, for: record.id, in: container, db: db)
        }
        let (account, containerID) = (container.account.string, container.container.string)
        try await db.run(
            """
            INSERT INTO item (account_id, container_id, item_id, path, path_key, kind, current_version, is_deleted)
            VALUES (\(account), \(containerID), \(record.id.string), \(record.path.string), \
            \(record.path.collisionKey), \(record.kind.rawValue), \(record.currentVersion?.string), \(record.isDeleted))
            ON CONFLICT (account_id, container_id, item_id) DO UPDATE SET path = excluded.path,
                path_key = excluded.path_key, kind = excluded.kind, current_version = excluded.current_version,
                is_deleted = excluded.is_deleted
            """)
        let old = before?.versions.versions ?? [:]
        for (id, version) in item.versions.versions where old[id] != version {
            try await db.run(
                """
                INSERT INTO version (account_id, version_id, container_id, item_id, record)
                VALUES (\(account), \(id.string), \(containerID), \(record.id.string), \(try StoredForm.encode(version)))
                ON CONFLICT (account_id, version_id) DO UPDATE SET record = excluded.record
                """)
            if old[id] == nil { try await reference(version, of: container.account, db: db) }
        }
        let removed = old.filter { item.versions.versions[$0.key] == nil }
        if !removed.isEmpty { try await lockAccount(container.account, db: db) }
        for (id, version) in removed {
            try await db.run("DELETE FROM version WHERE account_id = \(account) AND version_id = \(id.string)")
            try await release(version, of: container.account, db: db)
        }
        let token = try await append(change.changes, to: container, state: &state, in: db)
        return ItemResponse(item: record, outcome: change.outcome, version: change.version, token: token)
    }

    /// Records which chunks a new version uses.
    private static func reference(_ version: VersionRecord, of account: AccountID, db: PostgresTransaction)
        async throws
    {
        let hashes = Array(Set(version.manifest.chunks.map(\.hash.string)))
        guard !hashes.isEmpty else { return }
        try await db.run(
            """
            INSERT INTO version_chunk (account_id, version_id, hash)
            SELECT \(account.string), \(version.id.string), hash FROM unnest(\(hashes)) AS entry(hash)
            ON CONFLICT DO NOTHING
            """)
    }

    /// Drops a removed version's chunk references; a chunk no version uses any more stops counting against the
    /// quota and is forgotten (a later upload of the same bytes stores it again). The account's lock is held.
    private static func release(_ version: VersionRecord, of account: AccountID, db: PostgresTransaction)
        async throws
    {
        try await db.run(
            "DELETE FROM version_chunk WHERE account_id = \(account.string) AND version_id = \(version.id.string)")
        let hashes = Array(Set(version.manifest.chunks.map(\.hash.string)))
        guard !hashes.isEmpty else { return }
        let freed =
            try await db.value(
                """
                WITH unused AS (
                    DELETE FROM chunk WHERE account_id = \(account.string) AND hash = ANY(\(hashes))
                        AND NOT EXISTS (
                            SELECT 1 FROM version_chunk
                            WHERE version_chunk.account_id = chunk.account_id AND version_chunk.hash = chunk.hash)
                    RETURNING size)
                SELECT coalesce(sum(size), 0)::BIGINT FROM unused
                """, as: Int64.self) ?? 0
        if freed > 0 {
            try await db.run("UPDATE account SET used_bytes = used_bytes - \(freed) WHERE id = \(account.string)")
        }
    }

    private static func loadExisting(_ id: ItemID, in container: ContainerKey, db: PostgresTransaction) async throws
        -> StoredItem
    {
        guard let item = try await load(id, in: container, db: db) else {
            throw ProtocolError(.itemNotFound, "no item \(id) in container \(container.container)")
        }
        return item
    }

    private static func load(_ id: ItemID, in container: ContainerKey, db: PostgresTransaction) async throws
        -> StoredItem?
    {
        let (account, containerID) = (container.account.string, container.container.string)
        guard
            let row = try await db.row(
                """
                SELECT \(unescaped: itemColumns) FROM item
                WHERE account_id = \(account) AND container_id = \(containerID) AND item_id = \(id.string)
                """, as: ItemRow.self)
        else { return nil }
        let record = try record(from: row)
        let versions = try await db.values(
            """
            SELECT record FROM version
            WHERE account_id = \(account) AND container_id = \(containerID) AND item_id = \(id.string)
            """, as: String.self
        ).map { try StoredForm.decode(VersionRecord.self, $0) }
        return StoredItem(
            record: record,
            versions: ItemVersions(
                itemID: id, versions: versions, current: record.currentVersion, isDeleted: record.isDeleted))
    }

    typealias ItemRow = (String, String, String, String?, Bool)
    static let itemColumns = "item_id, path, kind, current_version, is_deleted"

    static func record(from row: ItemRow) throws -> ItemRecord {
        guard let kind = ItemKind(rawValue: row.2) else {
            throw ProtocolError(.internalError, "item \(row.0) has an unknown kind")
        }
        return ItemRecord(
            id: try ItemID(row.0), path: try ItemPath(row.1), kind: kind,
            currentVersion: try row.3.map { try VersionID($0) }, isDeleted: row.4)
    }
}
