import Foundation
import PostgresNIO
import UbiquityProtocol

extension PostgresMetadataStore {
    public func createItem(_ request: CreateItemRequest, in container: ContainerKey) async throws -> ItemResponse {
        if let version = request.version {
            try version.check(fits: request.kind, of: request.id)
        }
        let (retention, now) = (retention, clock())
        return try await committer.run(on: container, of: self, keys: ItemWorkKeys(request)) { work in
            try await Self.createItem(request, in: work, retention: retention, now: now)
        }
    }

    public func commit(_ version: VersionPayload, in container: ContainerKey) async throws -> ItemResponse {
        let (retention, now) = (retention, clock())
        return try await committer.run(on: container, of: self, keys: ItemWorkKeys(version)) { work in
            try await Self.commit(version, in: work, retention: retention, now: now)
        }
    }

    /// Applies the operations in order in one transaction (shared with other callers' through the group committer),
    /// each refused one undone alone. A failure of the store fails the whole batch.
    public func applyItemBatch(_ operations: [ItemBatchOperation], in container: ContainerKey) async throws
        -> [Result<ItemResponse, ProtocolError>]
    {
        let (retention, now) = (retention, clock())
        return try await committer.run(on: container, of: self, keys: ItemWorkKeys(operations)) { work in
            var results: [Result<ItemResponse, ProtocolError>] = []
            for operation in operations {
                let before = work.contents
                do {
                    switch operation {
                    case .create(let request):
                        if let version = request.version { try version.check(fits: request.kind, of: request.id) }
                        results.append(
                            .success(try await Self.createItem(request, in: work, retention: retention, now: now)))
                    case .commit(let version):
                        results.append(
                            .success(try await Self.commit(version, in: work, retention: retention, now: now)))
                    }
                } catch let error as ProtocolError {
                    work.contents = before
                    results.append(.failure(error))
                }
            }
            return results
        }
    }

    private static func commit(
        _ payload: VersionPayload, in work: PostgresItemWork, retention: VersionRetention, now: Date
    ) async throws -> ItemResponse {
        let item = try await loadExisting(payload.itemID, in: work)
        let version = try payload.resolved { item.versions.versions[$0]?.manifest }
        try version.check(fits: item.record.kind, of: item.record.id)
        var response = try await commit(version, to: item, in: work, retention: retention, now: now)
        if payload.deltaBase != nil, response.version?.id == version.id { response.version = nil }
        return response
    }

    private static func createItem(
        _ request: CreateItemRequest, in work: PostgresItemWork, retention: VersionRetention, now: Date
    ) async throws -> ItemResponse {
        if let existing = try await work.item(request.id) {
            guard existing.record.path == request.path, existing.record.kind == request.kind else {
                throw ProtocolError(
                    .itemExists,
                    "item \(request.id) exists already, at \(existing.record.path) as a "
                        + "\(existing.record.kind.rawValue)")
            }
            guard let version = request.version else {
                let state = work.contents.state
                let token = FeedToken(feed: .changes, epoch: state.epoch, sequence: state.feedSequence).token
                return ItemResponse(item: existing.record, token: token)
            }
            return try await commit(version, to: existing, in: work, retention: retention, now: now)
        }
        let record = ItemRecord(id: request.id, path: request.path, kind: request.kind)
        var item = StoredItem(record: record, versions: ItemVersions(itemID: request.id))
        var change = ItemChange(changes: [.itemCreated(itemID: request.id, path: request.path, kind: request.kind)])
        if let version = request.version {
            let committed = try await apply(version, to: &item, in: work, retention: retention, now: now)
            change.changes += committed.changes
            change.outcome = committed.outcome
            change.version = committed.version
        }
        return try await save(item, before: nil, change: change, in: work)
    }

    public func moveItem(_ id: ItemID, to path: ItemPath, in container: ContainerKey) async throws -> ItemResponse {
        try await update(id, in: container, paths: [path]) { item in
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
            guard let item = try await PostgresItemWork.lookup(items: [id], in: container, db: db).items[id] else {
                return nil
            }
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

    /// Runs `body` on the stored item in a write transaction (shared through the group committer) and saves the
    /// result.
    private func update(
        _ id: ItemID, in container: ContainerKey, paths: [ItemPath] = [],
        _ body: @escaping @Sendable (inout StoredItem) throws -> ItemChange
    ) async throws -> ItemResponse {
        try await committer.run(on: container, of: self, keys: ItemWorkKeys(items: [id], paths: paths)) { work in
            let before = try await Self.loadExisting(id, in: work)
            var item = before
            let change = try body(&item)
            return try await Self.save(item, before: before, change: change, in: work)
        }
    }

    private static func commit(
        _ version: VersionRecord, to stored: StoredItem, in work: PostgresItemWork, retention: VersionRetention,
        now: Date
    ) async throws -> ItemResponse {
        var item = stored
        let change = try await apply(version, to: &item, in: work, retention: retention, now: now)
        return try await save(item, before: stored, change: change, in: work)
    }

    /// Commits `version` to `item` (in memory) after checking its id is new and its chunks are all stored. The
    /// account's lock is taken before the chunks are looked at, so none of them is forgotten before this commits.
    private static func apply(
        _ version: VersionRecord, to item: inout StoredItem, in work: PostgresItemWork, retention: VersionRetention,
        now: Date
    ) async throws -> ItemChange {
        var version = version
        version.modificationDate = StoredForm.date(StoredForm.microseconds(version.modificationDate))
        if let existing = try await work.version(version.id) {
            guard existing.item == version.itemID, existing.record.contentHash == version.contentHash else {
                throw ProtocolError(.versionExists, "version \(version.id) exists already with other content")
            }
            return ItemChange(changes: [], outcome: .identical, version: existing.record)
        }
        let missing = try await work.missing(version.manifest.chunks.map(\.hash))
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
        _ item: StoredItem, before: StoredItem?, change: ItemChange, in work: PostgresItemWork
    ) async throws -> ItemResponse {
        var stored = item
        stored.record.currentVersion = item.versions.current
        stored.record.isDeleted = item.versions.isDeleted
        let record = stored.record
        let wasLive = before.map { !$0.record.isDeleted } ?? false
        let moved = before?.record.path != record.path
        if wasLive, let before, record.isDeleted || moved {
            try await release(before.record.path, in: work)
        }
        if !record.isDeleted, !wasLive || moved {
            try await claim(record.path, kind: record.kind, for: record.id, in: work)
        }
        try await work.save(stored, before: before)
        let token = try work.append(change.changes)
        return ItemResponse(item: record, outcome: change.outcome, version: change.version, token: token)
    }

    private static func loadExisting(_ id: ItemID, in work: PostgresItemWork) async throws -> StoredItem {
        guard let item = try await work.item(id) else {
            throw ProtocolError(.itemNotFound, "no item \(id) in container \(work.container.container)")
        }
        return item
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
