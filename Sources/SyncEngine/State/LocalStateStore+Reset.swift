import Foundation
import GRDB
import SQLiteSupport

extension LocalStateStore {
    /// Empties the database in place, even a damaged one, and makes its tables again: what the engine knew is gone,
    /// and it starts afresh as a device set up again does, but for what was made here and not yet sent
    /// (``UnsentWork``), kept as far as the damage lets it be read. A copy of the file as it was (and of its
    /// write-ahead log) is kept first at `copy` (and `copy` + `-wal`), when the database is a file, for a look.
    ///
    /// The file is emptied where it is, not replaced: other connections to it (an app's, reading the engine's
    /// state) see the empty database, and none of them is left with a file moved away whose write-ahead log has the
    /// new one's name.
    /// - Throws: SQLite's error when the reset or the migration fails (the disk refusing the write); the copy's
    ///   failure only leaves it out.
    func resetToEmpty(keepingCopyAt copy: URL) throws {
        var unsent = UnsentWork()
        try cache.emptying {
            try pool.barrierWriteWithoutTransaction { db in
                if let path = (pool as? DatabasePool)?.path { Self.copy(databaseAt: path, to: copy) }
                unsent = UnsentWork(readingFrom: db)
                try db.resetToEmpty()
            }
        }
        try Self.migrator.migrate(pool)
        try restore(unsent)
    }

    /// Puts back what was made here and not yet sent, read from a database before it was emptied.
    func restore(_ unsent: UnsentWork) throws {
        guard !unsent.isEmpty else { return }
        try pool.write { db in try unsent.restore(in: db) }
    }

    /// Copies the database file at `path`, and its write-ahead log, to `copy` (and `copy` + `-wal`), as far as they
    /// can be read: a damaged database kept for a look.
    static func copy(databaseAt path: String, to copy: URL) {
        let files = FileManager.default
        try? files.copyItem(atPath: path, toPath: copy.path)
        if files.fileExists(atPath: path + "-wal") {
            try? files.copyItem(atPath: path + "-wal", toPath: copy.path + "-wal")
        }
    }
}

/// What only the state database holds: the key-value writes made here and the operations on versions queued here
/// (resolutions made offline, say), not yet sent. Everything else in it the engine learns again from the disk and
/// the service; these it would lose. Read from a damaged database table by table, as far as its pages allow.
struct UnsentWork: Sendable {
    var keyValues: [(key: String, value: String?, timestamp: Double)] = []
    var operations: [(item: String, operation: String)] = []

    var isEmpty: Bool { keyValues.isEmpty && operations.isEmpty }

    init() {}

    /// What `db` holds that was not sent; a table that cannot be read gives nothing.
    init(readingFrom db: Database) {
        let pending = try? Row.fetchAll(db, sql: "SELECT key, value, timestamp FROM key_value WHERE pending = 1")
        keyValues = (pending ?? []).map { ($0["key"], $0["value"], $0["timestamp"]) }
        let queued = try? Row.fetchAll(db, sql: "SELECT item_id, operation FROM outbox ORDER BY sequence")
        operations = (queued ?? []).map { ($0["item_id"], $0["operation"]) }
    }

    /// The database at `path` as far as it opens and reads (none when it does not).
    init(readingDatabaseAt path: String) {
        var configuration = Configuration()
        configuration.readonly = true
        self =
            (try? DatabaseQueue(path: path, configuration: configuration).read { UnsentWork(readingFrom: $0) })
            ?? UnsentWork()
    }

    /// Writes it into `db`, pending again, in its order.
    func restore(in db: Database) throws {
        for write in keyValues {
            try db.execute(
                sql: "INSERT OR REPLACE INTO key_value (key, value, timestamp, pending) VALUES (?, ?, ?, 1)",
                arguments: [write.key, write.value, write.timestamp])
        }
        for queued in operations {
            try db.execute(
                sql: "INSERT INTO outbox (item_id, operation) VALUES (?, ?)",
                arguments: [queued.item, queued.operation])
        }
    }
}
