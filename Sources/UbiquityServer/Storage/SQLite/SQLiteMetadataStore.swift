import Foundation
import GRDB
import UbiquityProtocol

/// The embedded default ``MetadataStore``: one SQLite database (WAL mode, through GRDB) in the data directory.
///
/// Every operation is one write transaction, so an item's new state and the feed entries it makes land together.
/// With ``Durability/processCrash`` (the default) a transaction is durable once it returns as far as a killed
/// process is concerned, and the database stays consistent after a power loss; ``Durability/powerLoss`` also
/// flushes every commit to disk, at the cost of an `fsync` each.
public struct SQLiteMetadataStore: MetadataStore {
    /// How hard commits are pushed to disk.
    public enum Durability: Sendable {
        /// `synchronous = NORMAL`: survives any process crash; a power loss may lose the latest commits.
        case processCrash
        /// `synchronous = FULL`: every commit is on disk before it returns.
        case powerLoss
    }

    let pool: DatabasePool
    let committer: GroupCommitter
    let retention: VersionRetention
    let clock: @Sendable () -> Date

    /// Opens (creating and migrating as needed) the database at `path`.
    /// - Parameters:
    ///   - path: The database file.
    ///   - retention: How long old versions are kept.
    ///   - durability: How hard commits are pushed to disk.
    ///   - clock: The time retention is measured against.
    public init(
        path: String, retention: VersionRetention = VersionRetention(), durability: Durability = .processCrash,
        clock: @escaping @Sendable () -> Date = Date.init
    ) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let synchronous = durability == .powerLoss ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            // Fewer, larger checkpoints (each one flushes the database file): about 40 MB of WAL between them.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 10000")
            try db.execute(sql: "PRAGMA cache_size = -32768")
            // A group commit puts each operation in a savepoint; past 64 KiB SQLite would spill its journal to a new
            // temporary file on disk, a file created and deleted for every few batches.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        committer = GroupCommitter(writer: pool)
        self.retention = retention
        self.clock = clock
        try Self.migrator.migrate(pool)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE account (
                        id TEXT PRIMARY KEY, name TEXT NOT NULL, name_key TEXT NOT NULL UNIQUE,
                        password_hash TEXT NOT NULL, quota_bytes INTEGER, used_bytes INTEGER NOT NULL DEFAULT 0,
                        created_at INTEGER NOT NULL);
                    CREATE TABLE device_token (
                        id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES account(id),
                        secret_hash BLOB NOT NULL UNIQUE, device_id TEXT NOT NULL, device_name TEXT NOT NULL,
                        containers TEXT, created_at INTEGER NOT NULL, revoked_at INTEGER);
                    CREATE INDEX device_token_account ON device_token(account_id);
                    CREATE TABLE chunk (
                        account_id TEXT NOT NULL, hash TEXT NOT NULL, size INTEGER NOT NULL,
                        PRIMARY KEY (account_id, hash)) WITHOUT ROWID;
                    CREATE TABLE container (
                        account_id TEXT NOT NULL, container_id TEXT NOT NULL, epoch TEXT NOT NULL,
                        feed_sequence INTEGER NOT NULL DEFAULT 0, kv_sequence INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (account_id, container_id)) WITHOUT ROWID;
                    CREATE TABLE item (
                        account_id TEXT NOT NULL, container_id TEXT NOT NULL, item_id TEXT NOT NULL,
                        path TEXT NOT NULL, path_key TEXT NOT NULL, kind TEXT NOT NULL, current_version TEXT,
                        is_deleted INTEGER NOT NULL,
                        PRIMARY KEY (account_id, container_id, item_id)) WITHOUT ROWID;
                    CREATE UNIQUE INDEX item_live_path ON item(account_id, container_id, path_key)
                        WHERE is_deleted = 0;
                    CREATE TABLE folder (
                        account_id TEXT NOT NULL, container_id TEXT NOT NULL, path_key TEXT NOT NULL,
                        path TEXT NOT NULL, item_count INTEGER NOT NULL,
                        PRIMARY KEY (account_id, container_id, path_key)) WITHOUT ROWID;
                    CREATE TABLE version (
                        account_id TEXT NOT NULL, version_id TEXT NOT NULL, container_id TEXT NOT NULL,
                        item_id TEXT NOT NULL, record TEXT NOT NULL,
                        PRIMARY KEY (account_id, version_id)) WITHOUT ROWID;
                    CREATE INDEX version_item ON version(account_id, container_id, item_id);
                    CREATE TABLE version_chunk (
                        account_id TEXT NOT NULL, version_id TEXT NOT NULL, hash TEXT NOT NULL,
                        PRIMARY KEY (account_id, version_id, hash)) WITHOUT ROWID;
                    CREATE INDEX version_chunk_hash ON version_chunk(account_id, hash);
                    CREATE TABLE change (
                        account_id TEXT NOT NULL, container_id TEXT NOT NULL, sequence INTEGER NOT NULL,
                        body TEXT NOT NULL,
                        PRIMARY KEY (account_id, container_id, sequence)) WITHOUT ROWID;
                    CREATE TABLE kv_entry (
                        account_id TEXT NOT NULL, container_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT,
                        timestamp INTEGER NOT NULL, device_id TEXT NOT NULL, sequence INTEGER NOT NULL,
                        PRIMARY KEY (account_id, container_id, key)) WITHOUT ROWID;
                    CREATE INDEX kv_entry_sequence ON kv_entry(account_id, container_id, sequence);
                    """)
        }
        return migrator
    }

    /// Records and times as every driver stores them (``StoredForm``).
    static func encode(_ value: some Encodable) throws -> String { try StoredForm.encode(value) }
    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T { try StoredForm.decode(type, text) }
    static func microseconds(_ date: Date) -> Int64 { StoredForm.microseconds(date) }
    static func date(_ microseconds: Int64) -> Date { StoredForm.date(microseconds) }
}
