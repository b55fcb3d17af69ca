import Foundation
import GRDB
import UbiquityProtocol

/// The engine's local state database, `.ubiquity/state.sqlite` (SQLite through GRDB, WAL): what it knows of every
/// item (its observations, ``StoredItem``), and small values such as the container's feed token. Every write is one transaction, so a killed engine
/// finds the state of its last completed step.
public struct LocalStateStore: Sendable {
    let pool: any DatabaseWriter
    /// The records decoded lately (``RecordCache``).
    let cache = RecordCache()

    /// Opens (creating and migrating as needed) the database at `url`.
    public init(url: URL) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        // Statement journals and sorts stay in memory rather than in temporary files created and deleted on disk.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            // Fewer, larger checkpoints: each one waits for the disk inside a commit, on the thread committing (the
            // engine's, for its grouped writes), and a page written many times between two is written back once.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 10000")
        }
        pool = try DatabasePool(path: url.path, configuration: configuration)
        try Self.migrator.migrate(pool)
    }

    private init(memory: DatabaseQueue) throws {
        pool = memory
        try Self.migrator.migrate(pool)
    }

    /// A new, empty database in memory: the engine's simulation keeps each device's state so.
    public static func inMemory() throws -> LocalStateStore { try LocalStateStore(memory: DatabaseQueue()) }

    /// A copy in memory of everything committed so far: what a device's engine finds when it starts again after
    /// being killed now (the simulation's crash), while the killed engine goes on writing only its own copy.
    public func snapshot() throws -> LocalStateStore {
        let copy = try DatabaseQueue()
        try pool.backup(to: copy)
        return try LocalStateStore(memory: copy)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE item (id TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE, record TEXT NOT NULL);
                    CREATE TABLE value (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    """)
        }
        migrator.registerMigration("v2") { db in
            try db.execute(
                sql: """
                    CREATE TABLE version (
                        item_id TEXT NOT NULL, version_id TEXT NOT NULL, record TEXT NOT NULL,
                        PRIMARY KEY (item_id, version_id));
                    CREATE TABLE local_chunk (
                        hash TEXT NOT NULL, item_id TEXT NOT NULL, file TEXT NOT NULL, offset INTEGER NOT NULL,
                        size INTEGER NOT NULL);
                    CREATE INDEX local_chunk_hash ON local_chunk (hash);
                    CREATE INDEX local_chunk_item ON local_chunk (item_id);
                    CREATE TABLE outbox (
                        sequence INTEGER PRIMARY KEY AUTOINCREMENT, item_id TEXT NOT NULL, operation TEXT NOT NULL);
                    """)
        }
        registerKeyValueMigration(&migrator)
        registerObservationMigration(&migrator)
        return migrator
    }

    /// Every known item, as apps see it.
    public func items() throws -> [LocalItem] {
        try records().map(\.item).sorted { $0.path < $1.path }
    }

    /// Every known item as apps see it, in no particular order: what an app takes once when it opens the container.
    ///
    /// Read from the items' own column alone (not the planner's observations, nor through the record cache, which
    /// would keep only the last few thousand), in its binary form: 100,000 items took seconds as JSON sent over the
    /// engine's socket.
    public func snapshotItems() async throws -> [LocalItem] {
        let records = try await pool.read { db in try Data.fetchAll(db, sql: "SELECT record FROM item_record") }
        return try await BlockingWork.run { try records.map { try LocalItem(stateBytes: $0) } }
    }

    /// The items at `paths` and everything below them (what a scan of those paths covers), as apps see them.
    public func items(atOrBelow paths: Set<String>) throws -> [LocalItem] {
        try records(atOrBelow: paths).map(\.item).sorted { $0.path < $1.path }
    }

    /// The item with this id, as apps see it.
    public func item(_ id: ItemID) throws -> LocalItem? { try record(id)?.item }

    /// The item at this path, as apps see it.
    public func item(at path: ItemPath) throws -> LocalItem? { try record(at: path)?.item }

    /// Stores items as apps see them (each taken as in step with the service as it says, to be checked by the next
    /// round) and removes others, in one transaction.
    public func update(saving items: [LocalItem] = [], removing removed: [ItemID] = []) throws {
        try write(
            items.map { RecordWrite(StoredItem(migrating: $0), inStep: false) }
                + removed.map { RecordWrite(removing: $0) })
    }

    /// A stored value, such as the feed token.
    public func value(forKey key: String) throws -> String? {
        try readOne { db in
            try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM value WHERE key = ?"), arguments: [key])
        }
    }

    /// Runs `read`, one statement's reading (or reads that need no common snapshot), without a transaction around
    /// it: SQLite reads a statement from one snapshot of the database, and a transaction of its own (GRDB's `read`)
    /// costs two more statements, parsed each time — most of what a read of one record costs.
    func readOne<Value>(_ read: (Database) throws -> Value) throws -> Value {
        try pool.unsafeRead(read)
    }

    /// Stores a value (`nil` removes it).
    public func setValue(_ value: String?, forKey key: String) throws {
        try pool.write { db in
            if let value {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO value (key, value) VALUES (?, ?)", arguments: [key, value])
            } else {
                try db.execute(sql: "DELETE FROM value WHERE key = ?", arguments: [key])
            }
        }
    }
}
