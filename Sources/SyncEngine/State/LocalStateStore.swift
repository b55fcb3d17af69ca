import Foundation
import GRDB
import UbiquityProtocol

/// The engine's local state database, `.ubiquity/state.sqlite` (SQLite through GRDB, WAL): what it knows of every
/// item, and small values such as the container's feed token. Every write is one transaction, so a killed engine
/// finds the state of its last completed step.
public struct LocalStateStore: Sendable {
    let pool: DatabasePool

    /// Opens (creating and migrating as needed) the database at `url`.
    public init(url: URL) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        pool = try DatabasePool(path: url.path, configuration: configuration)
        try Self.migrator.migrate(pool)
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
        return migrator
    }

    /// Every known item.
    public func items() throws -> [LocalItem] {
        try pool.read { db in
            try String.fetchAll(db, sql: "SELECT record FROM item ORDER BY path").map(Self.decode)
        }
    }

    /// The items at `paths` and everything below them (what a scan of those paths covers).
    public func items(atOrBelow paths: Set<String>) throws -> [LocalItem] {
        try pool.read { db in
            var records: [String: String] = [:]
            for path in paths where !path.isEmpty {
                // Below `path` is the range from "path/" up to (not including) "path0" ('0' follows '/').
                let rows = try Row.fetchAll(
                    db, sql: "SELECT id, record FROM item WHERE path = ? OR (path >= ? AND path < ?)",
                    arguments: [path, path + "/", path + "0"])
                for row in rows { records[row["id"]] = row["record"] }
            }
            return try records.values.map(Self.decode).sorted { $0.path < $1.path }
        }
    }

    /// The items whose last download failed.
    public func itemsWithDownloadErrors() throws -> [LocalItem] {
        try pool.read { db in
            try String.fetchAll(
                db, sql: "SELECT record FROM item WHERE json_extract(record, '$.downloadError') IS NOT NULL"
            ).map(Self.decode)
        }
    }

    /// The item with this id.
    public func item(_ id: ItemID) throws -> LocalItem? {
        try pool.read { db in
            try String.fetchOne(db, sql: "SELECT record FROM item WHERE id = ?", arguments: [id.string]).map(
                Self.decode)
        }
    }

    /// The item at this path.
    public func item(at path: ItemPath) throws -> LocalItem? {
        try pool.read { db in
            try String.fetchOne(db, sql: "SELECT record FROM item WHERE path = ?", arguments: [path.string])
                .map(Self.decode)
        }
    }

    /// Stores items (new or changed) and removes others, in one transaction.
    public func update(saving items: [LocalItem] = [], removing removed: [ItemID] = []) throws {
        let records = try items.map { ($0.id.string, $0.path.string, try Self.encode($0)) }
        try pool.write { db in
            for id in removed {
                for table in ["item WHERE id", "version WHERE item_id", "local_chunk WHERE item_id"] {
                    try db.execute(sql: "DELETE FROM \(table) = ?", arguments: [id.string])
                }
            }
            for (id, path, record) in records {
                // A path taken over by another item frees it first (the other one moved or was replaced).
                try db.execute(sql: "DELETE FROM item WHERE path = ? AND id != ?", arguments: [path, id])
                try db.execute(
                    sql: "INSERT OR REPLACE INTO item (id, path, record) VALUES (?, ?, ?)",
                    arguments: [id, path, record])
            }
        }
    }

    /// A stored value, such as the feed token.
    public func value(forKey key: String) throws -> String? {
        try pool.read { db in try String.fetchOne(db, sql: "SELECT value FROM value WHERE key = ?", arguments: [key]) }
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

    private static func encode(_ item: LocalItem) throws -> String {
        String(decoding: try JSONEncoder().encode(item), as: UTF8.self)
    }

    private static func decode(_ text: String) throws -> LocalItem {
        try JSONDecoder().decode(LocalItem.self, from: Data(text.utf8))
    }
}
