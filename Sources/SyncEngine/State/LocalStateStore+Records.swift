import Foundation
import GRDB
import SQLiteSupport
import UbiquityProtocol

/// One change to the items' records, written with others in one transaction.
public struct RecordWrite: Sendable {
    /// When the write applies.
    public enum Condition: Sendable {
        /// Always.
        case always
        /// Only while the stored record is still `expected` (`nil`: there is none): what was read before a scan is
        /// what the scan's observation is applied to, so an operation that recorded its outcome meanwhile wins.
        case unchanged(StoredItem?)
        /// Only while no item's local copy is at the new record's path: a file a scan found as new is not an item of
        /// its own when an operation placed it there for another item meanwhile.
        case pathUnclaimed
    }

    /// The item.
    public var id: ItemID
    /// Its new record; `nil` removes it (with its versions and chunk locations).
    public var record: StoredItem?
    /// Whether the planner has nothing to do for the item (kept as a column, so a round plans only the others).
    public var inStep: Bool
    /// When it applies.
    public var condition: Condition
    /// Where the chunks of the item's local copy lie now, replacing what was recorded (`nil`: unchanged), written in
    /// the same transaction.
    var chunkLocations: [(ChunkHash, LocalChunkLocation)]?
    /// The record of the item's current version to keep from now on (`nil`: unchanged), written in the same
    /// transaction.
    var currentVersion: VersionRecord?

    /// Stores `record`.
    public init(_ record: StoredItem, inStep: Bool, if condition: Condition = .always) {
        id = record.id
        self.record = record
        self.inStep = inStep
        self.condition = condition
    }

    /// Removes the item `id`.
    public init(removing id: ItemID, if condition: Condition = .always) {
        self.id = id
        record = nil
        inStep = true
        self.condition = condition
    }
}

extension LocalStateStore {
    /// The items' table keeps, per item: the observations and the item as apps see it (each in a binary form; the
    /// item is also what the version changes made by apps read and write), its path as apps see it (indexed, not
    /// unique: two items may claim one path for a while — a new file where the service has another item, say —
    /// until the planner settles it), the collision key of its live path on the service (who holds a path there),
    /// the inode of its file here (a move of it), and whether it is in step.
    static func registerObservationMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v4-observations") { db in
            try db.execute(
                sql: """
                    CREATE TABLE item_record (
                        id TEXT PRIMARY KEY, path TEXT NOT NULL, remote_key TEXT, in_step INTEGER NOT NULL,
                        record TEXT NOT NULL, observation TEXT NOT NULL);
                    CREATE INDEX item_record_path ON item_record (path);
                    CREATE INDEX item_record_remote_key ON item_record (remote_key);
                    CREATE INDEX item_record_pending ON item_record (in_step) WHERE in_step = 0;
                    """)
            // Items kept before: each the service's record, the synced state and the local copy as it said; the
            // first round after checks them all.
            for text in try String.fetchAll(db, sql: "SELECT record FROM item") {
                let item = try JSONDecoder().decode(LocalItem.self, from: Data(text.utf8))
                let current = try String.fetchOne(
                    db, sql: "SELECT value FROM value WHERE key = ?", arguments: [currentVersionKey(of: item.id)]
                ).flatMap { try? WireJSONDecoder().decode(VersionRecord.self, from: $0) }
                let hash = current?.id == item.serverVersion ? current?.contentHash : nil
                try insert(
                    RecordWrite(StoredItem(migrating: item, currentContentHash: hash), inStep: false), in: db,
                    withFileInode: false)
            }
            try db.execute(sql: "DROP TABLE item")
        }
        // The items not in step, by id: the planner reads them a page at a time.
        migrator.registerMigration("v5-pending-by-id") { db in
            try db.execute(
                sql: """
                    DROP INDEX item_record_pending;
                    CREATE INDEX item_record_pending ON item_record (id) WHERE in_step = 0;
                    """)
        }
        // Items as apps see them in their binary form (``LocalItem/stateBytes``) rather than as JSON.
        migrator.registerMigration("v6-binary-items") { db in
            let rows = try Row.fetchCursor(
                db, sql: "SELECT id, record FROM item_record WHERE typeof(record) = 'text'")
            var converted: [(String, Data)] = []
            while let row = try rows.next() {
                let item = try JSONDecoder().decode(LocalItem.self, from: Data((row["record"] as String).utf8))
                converted.append((row["id"], item.stateBytes))
            }
            for (id, bytes) in converted {
                try db.execute(sql: "UPDATE item_record SET record = ? WHERE id = ?", arguments: [bytes, id])
            }
        }
        // The observations in their binary form (``ItemObservation/stateBytes``) too.
        migrator.registerMigration("v7-binary-observations") { db in
            let rows = try Row.fetchCursor(
                db, sql: "SELECT id, observation FROM item_record WHERE typeof(observation) = 'text'")
            var converted: [(String, Data)] = []
            while let row = try rows.next() {
                let observation = try JSONDecoder().decode(
                    ItemObservation.self, from: Data((row["observation"] as String).utf8))
                converted.append((row["id"], observation.stateBytes))
            }
            for (id, bytes) in converted {
                try db.execute(sql: "UPDATE item_record SET observation = ? WHERE id = ?", arguments: [bytes, id])
            }
        }
        // The inode of each item's file (``fileInode(of:)``), indexed: the start-up comparison asks whether a file
        // it found could be an item's that moved.
        migrator.registerMigration("v8-file-inode") { db in
            try db.execute(sql: "ALTER TABLE item_record ADD COLUMN file_inode INTEGER")
            let rows = try Row.fetchCursor(db, sql: "SELECT id, observation FROM item_record")
            var inodes: [(String, Int64)] = []
            while let row = try rows.next() {
                let observation = try ItemObservation(stateBytes: row["observation"] as Data)
                if let inode = fileInode(of: observation) { inodes.append((row["id"], inode)) }
            }
            for (id, inode) in inodes {
                try db.execute(sql: "UPDATE item_record SET file_inode = ? WHERE id = ?", arguments: [inode, id])
            }
            try db.execute(
                sql: "CREATE INDEX item_record_file_inode ON item_record (file_inode) WHERE file_inode IS NOT NULL")
        }
    }

    /// The inode of the file an item was last seen as here, or last synced as: the file a move of it would be.
    static func fileInode(of observation: ItemObservation) -> Int64? {
        (observation.local?.identity ?? observation.synced?.identity).map { Int64(bitPattern: $0.inode) }
    }

    /// Of `entries` (found on disk by the start-up comparison, claimed by no item at their paths), the paths of
    /// those no item could claim at its end: no item was last seen or synced as a file of the same inode (it moved
    /// there), the service has no live item at a path colliding with theirs (made on both sides), and no item is at
    /// that path as apps see it (an item of another kind there, found missing, holds the path until the end of the
    /// comparison). Read in one transaction.
    public func claimedByNone(_ entries: [ScannedItem]) throws -> [ItemPath] {
        guard !entries.isEmpty else { return [] }
        return try pool.read { db in
            let inode = try db.cachedStatement(sql: "SELECT 1 FROM item_record WHERE file_inode = ? LIMIT 1")
            let remote = try db.cachedStatement(sql: "SELECT 1 FROM item_record WHERE remote_key = ? LIMIT 1")
            let path = try db.cachedStatement(sql: "SELECT 1 FROM item_record WHERE path = ? LIMIT 1")
            return try entries.filter { entry in
                try Bool.fetchOne(inode, arguments: [Int64(bitPattern: entry.identity.inode)]) == nil
                    && Bool.fetchOne(remote, arguments: [entry.path.collisionKey]) == nil
                    && Bool.fetchOne(path, arguments: [entry.path.string]) == nil
            }.map(\.path)
        }
    }

    /// The record of item `id`.
    public func record(_ id: ItemID) throws -> StoredItem? {
        if let cached = cache.record(id) { return cached }
        return try fetch("SELECT \(Self.columns) FROM item_record WHERE id = ?", [id.string]).first
    }

    /// The record of the item at `path` as apps see it; when two claim it, the one whose local copy is there.
    public func record(at path: ItemPath) throws -> StoredItem? {
        let found = try fetch("SELECT \(Self.columns) FROM item_record WHERE path = ?", [path.string])
        return found.first { $0.observation.local != nil } ?? found.first
    }

    /// Every item's record.
    public func records() throws -> [StoredItem] {
        try fetch("SELECT \(Self.columns) FROM item_record")
    }

    /// The records of the items at `paths` and below them.
    public func records(atOrBelow paths: Set<String>) throws -> [StoredItem] {
        // Below `path` is the range from "path/" up to (not including) "path0" ('0' follows '/').
        let queries = paths.filter { !$0.isEmpty }.map { path -> (String, StatementArguments) in
            (
                "SELECT \(Self.columns) FROM item_record WHERE path = ? OR (path >= ? AND path < ?)",
                [path, path + "/", path + "0"]
            )
        }
        return Self.distinct(try fetch(queries))
    }

    /// The records of the items the planner has work for.
    public func recordsNotInStep() throws -> [StoredItem] {
        try fetch("SELECT \(Self.columns) FROM item_record WHERE in_step = 0")
    }

    /// At most `limit` records of the items the planner has work for, in the order of their ids, from the first id
    /// after `id` (from the first without it): a page of them, so that a container of many items out of step is
    /// planned in pieces of bounded memory. A limit below one reads none.
    public func recordsNotInStep(after id: ItemID?, limit: Int) throws -> [StoredItem] {
        try fetch(
            "SELECT \(Self.columns) FROM item_record WHERE in_step = 0 AND id > ? ORDER BY id LIMIT ?",
            [id?.string ?? "", max(0, limit)])
    }

    /// The records of the items whose path is an entry of the folder `folder` (`""`: the container's own folder),
    /// not what is below those entries.
    public func records(directlyIn folder: String) throws -> [StoredItem] {
        if folder.isEmpty {
            return try fetch("SELECT \(Self.columns) FROM item_record WHERE instr(path, '/') = 0")
        }
        // Below `folder` is the range from "folder/" up to (not including) "folder0" ('0' follows '/').
        return try fetch(
            """
            SELECT \(Self.columns) FROM item_record
            WHERE path >= ? AND path < ? AND instr(substr(path, ?), '/') = 0
            """, [folder + "/", folder + "0", folder.unicodeScalars.count + 2])
    }

    /// The paths and ids of at most `limit` items after the row `after` (from the first without it), with the row
    /// each is in: a pass over the container's records that decodes none.
    public func itemPaths(after row: Int64?, limit: Int) throws -> [(row: Int64, path: String, id: ItemID)] {
        let rows = try pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT rowid, path, id FROM item_record WHERE rowid > ? ORDER BY rowid LIMIT ?",
                arguments: [row ?? 0, max(0, limit)])
        }
        return try rows.map { row throws(ProtocolError) in
            (row[0] as Int64, row[1] as String, try ItemID(row[2] as String))
        }
    }

    /// The records of the items `ids` (those that exist).
    public func records(_ ids: [ItemID]) throws -> [StoredItem] {
        let queries = ids.map { id -> (String, StatementArguments) in
            ("SELECT \(Self.columns) FROM item_record WHERE id = ?", [id.string])
        }
        return Self.distinct(try fetch(queries))
    }

    /// The records of the items `ids` that exist, by id: those the cache holds from it, the rest read together.
    public func records(byID ids: [ItemID]) throws -> [ItemID: StoredItem] {
        var found: [ItemID: StoredItem] = [:]
        var missing: [ItemID] = []
        for id in ids {
            if let cached = cache.record(id) { found[id] = cached } else { missing.append(id) }
        }
        for record in try records(missing) { found[record.id] = record }
        return found
    }

    /// The records of the items at `paths` (as apps see them).
    public func records(at paths: [ItemPath]) throws -> [StoredItem] {
        let queries = paths.map { path -> (String, StatementArguments) in
            ("SELECT \(Self.columns) FROM item_record WHERE path = ?", [path.string])
        }
        return Self.distinct(try fetch(queries))
    }

    /// The records of the items live on the service at the paths with these collision keys.
    public func records(withRemoteKeys keys: Set<String>) throws -> [StoredItem] {
        let queries = keys.map { key -> (String, StatementArguments) in
            ("SELECT \(Self.columns) FROM item_record WHERE remote_key = ?", [key])
        }
        return Self.distinct(try fetch(queries))
    }

    /// Each item once.
    private static func distinct(_ records: [StoredItem]) -> [StoredItem] {
        var seen = Set<ItemID>()
        return records.filter { seen.insert($0.id).inserted }
    }

    /// The columns a record is read from.
    private static let columns = "id, record, observation"

    /// The records a query finds: each from the cache when it is there, else decoded (and kept).
    private func fetch(_ sql: String, _ arguments: StatementArguments = []) throws -> [StoredItem] {
        try fetch([(sql, arguments)])
    }

    /// The records some queries find, read in one transaction (one snapshot of the database): each from the cache
    /// when no write committed since the read began, else decoded (and kept).
    private func fetch(_ queries: [(String, StatementArguments)]) throws -> [StoredItem] {
        guard !queries.isEmpty else { return [] }
        let generation = cache.readGeneration
        // A handful of fixed statements, each prepared once per connection; one alone is read from one snapshot
        // without a transaction of its own.
        let read = { (db: Database) in
            try queries.flatMap { sql, arguments in
                try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
            }
        }
        let rows = try queries.count == 1 ? readOne(read) : pool.read(read)
        return try decode(rows, readAt: generation)
    }

    /// `rows` as records, taken from the cache when there; what had to be decoded is kept if no write began since
    /// the read began at `generation` (`nil`: a write was under way, the cache is not to be used). Call it inside
    /// a write transaction with `whileWriting`: the cache is exact there.
    private func decode(_ rows: [Row], readAt generation: UInt64?, whileWriting: Bool = false) throws
        -> [StoredItem]
    {
        guard !rows.isEmpty else { return [] }
        let ids = try rows.map { row throws(ProtocolError) in try ItemID(row["id"] as String) }
        let cached: [ItemID: StoredItem] =
            whileWriting || generation != nil ? cache.records(ids, readAt: generation) : [:]
        var decoded: [StoredItem] = []
        var records: [StoredItem] = []
        records.reserveCapacity(rows.count)
        for (id, row) in zip(ids, rows) {
            if let hit = cached[id] {
                records.append(hit)
            } else {
                let record = try Self.decode(row)
                records.append(record)
                decoded.append(record)
            }
        }
        if let generation { cache.keep(decoded, readAt: generation) }
        return records
    }

    /// Applies `writes` in one transaction, each only when its condition holds.
    /// - Returns: The writes that applied, with the record each replaced.
    @discardableResult
    public func write(_ writes: [RecordWrite]) throws -> [(write: RecordWrite, before: StoredItem?)] {
        try write(groups: [writes])[0].get()
    }

    /// The writes of a group that applied, each with the record it replaced.
    typealias AppliedWrites = [(write: RecordWrite, before: StoredItem?)]

    /// Applies groups of writes in one transaction, in order, each group as ``write(_:)`` would apply it alone: each
    /// write only when its condition holds (over what the groups before it wrote), and a group that fails leaves
    /// nothing of itself and fails alone.
    /// - Returns: For each group, the writes that applied with the record each replaced, or why it failed.
    /// - Throws: When the transaction itself fails (then no group applied).
    func write(groups: [[RecordWrite]]) throws -> [Result<AppliedWrites, any Error>] {
        try cache.write {
            let outcomes = try writeRecords(groups)
            var stored: [(ItemID, StoredItem?)] = []
            for case .success(let applied) in outcomes {
                stored += applied.map { ($0.write.id, $0.write.record) }
            }
            return (outcomes, stored)
        }
    }

    private func writeRecords(
        _ groups: [[RecordWrite]]
    ) throws -> [Result<AppliedWrites, any Error>] {
        try pool.write { db in
            // What this transaction wrote so far, by item: the cache holds what was committed before it.
            var written: [ItemID: StoredItem?] = [:]
            var outcomes: [Result<AppliedWrites, any Error>] = []
            for writes in groups {
                var applied: [(RecordWrite, StoredItem?)] = []
                var wrote: [ItemID: StoredItem?] = [:]
                func apply() throws {
                    for write in writes {
                        let before: StoredItem?
                        if let known = wrote[write.id] ?? written[write.id] {
                            before = known
                        } else {
                            before =
                                try cache.recordWhileWriting(write.id)
                                ?? decode(
                                    Row.fetchAll(
                                        db.cachedStatement(sql: "SELECT \(Self.columns) FROM item_record WHERE id = ?"),
                                        arguments: [write.id.string]),
                                    readAt: nil, whileWriting: true
                                ).first
                        }
                        switch write.condition {
                        case .always: break
                        case .unchanged(let expected): guard before == expected else { continue }
                        case .pathUnclaimed:
                            guard let path = write.record?.path else { break }
                            let claimed = try decode(
                                Row.fetchAll(
                                    db.cachedStatement(
                                        sql: "SELECT \(Self.columns) FROM item_record WHERE path = ? AND id != ?"),
                                    arguments: [path.string, write.id.string]),
                                readAt: nil, whileWriting: true
                            ).contains { found in
                                // A record this transaction wrote, as it wrote it (the cache holds it as before).
                                let record = (wrote[found.id] ?? written[found.id]) ?? found
                                return record?.observation.local?.path == path
                            }
                            guard !claimed else { continue }
                        }
                        if write.record == nil {
                            for table in ["item_record WHERE id", "version WHERE item_id", "local_chunk WHERE item_id"]
                            {
                                try db.cachedStatement(sql: "DELETE FROM \(table) = ?").execute(arguments: [
                                    write.id.string
                                ])
                            }
                            try db.execute(
                                sql: "DELETE FROM value WHERE key = ?",
                                arguments: [Self.currentVersionKey(of: write.id)])
                        } else {
                            try Self.insert(write, over: before, in: db)
                        }
                        wrote[write.id] = .some(write.record)
                        applied.append((write, before))
                    }
                }
                if groups.count == 1 {
                    try apply()  // alone, its failure is the transaction's
                    outcomes.append(.success(applied))
                    continue
                }
                do {
                    try db.inPreparedSavepoint { try apply() }
                    written.merge(wrote) { _, new in new }
                    outcomes.append(.success(applied))
                } catch {
                    outcomes.append(.failure(error))
                }
            }
            return outcomes
        }
    }

    /// The column the service's path of an item is kept in for looking up who holds it.
    private static func remoteKey(of record: StoredItem) -> String? {
        record.observation.remote.flatMap { $0.isDeleted ? nil : $0.path.collisionKey }
    }

    /// Writes `write`'s record; `withFileInode` false only in a migration from before there was that column.
    ///
    /// Over a record `before` with the same indexed columns (path, remote key, file), only the row's own columns are
    /// rewritten: a replacement deletes and inserts the row, which rewrites an entry in every index too.
    private static func insert(
        _ write: RecordWrite, over before: StoredItem? = nil, in db: Database, withFileInode: Bool = true
    ) throws {
        guard let record = write.record else { return }
        if withFileInode, let before, before.id == record.id, before.path == record.path,
            remoteKey(of: before) == remoteKey(of: record),
            fileInode(of: before.observation) == fileInode(of: record.observation)
        {
            try db.cachedStatement(
                sql: "UPDATE item_record SET in_step = ?, record = ?, observation = ? WHERE id = ?"
            ).execute(arguments: [
                write.inStep ? 1 : 0, record.item.stateBytes, record.observation.stateBytes, record.id.string,
            ])
            if db.changesCount == 1 {
                if let locations = write.chunkLocations { try setChunkLocations(locations, of: record.id, in: db) }
                if let version = write.currentVersion { try setCurrentVersionRecord(version, of: record.id, in: db) }
                return
            }
        }
        let key = remoteKey(of: record)
        var arguments: StatementArguments = [
            record.id.string, record.path.string, key, write.inStep ? 1 : 0, record.item.stateBytes,
            record.observation.stateBytes,
        ]
        if withFileInode {
            arguments += [fileInode(of: record.observation)]
            try db.cachedStatement(
                sql: """
                    INSERT OR REPLACE INTO item_record (id, path, remote_key, in_step, record, observation, file_inode)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: arguments)
        } else {
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO item_record (id, path, remote_key, in_step, record, observation)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: arguments)
        }
        if let locations = write.chunkLocations { try setChunkLocations(locations, of: record.id, in: db) }
        if let version = write.currentVersion { try setCurrentVersionRecord(version, of: record.id, in: db) }
    }

    static func encode(_ value: some Encodable) throws -> String {
        String(decoding: try WireJSONEncoder().encode(value), as: UTF8.self)
    }

    static func decode(_ row: Row) throws -> StoredItem {
        let item = try LocalItem(stateBytes: row["record"] as Data)
        let observation = try ItemObservation(stateBytes: row["observation"] as Data)
        return StoredItem(
            observation, uploadError: item.uploadError, downloadError: item.downloadError,
            hasUnresolvedConflicts: item.hasUnresolvedConflicts)
    }
}
