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
    /// can be read: a damaged database kept for a look. Only the latest is kept (earlier copies beside it, named
    /// `<file>.damaged-…`, go first): a disk that keeps damaging the database would otherwise fill up with them.
    static func copy(databaseAt path: String, to copy: URL) {
        let files = FileManager.default
        let folder = copy.deletingLastPathComponent()
        let earlier = (path as NSString).lastPathComponent + ".damaged"
        for name in (try? files.contentsOfDirectory(atPath: folder.path)) ?? [] where name.hasPrefix(earlier) {
            try? files.removeItem(at: folder.appendingPathComponent(name, isDirectory: false))
        }
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

    /// What `db` holds that was not sent; a table that cannot be read gives nothing, and a row whose values are
    /// not of their columns' kinds (damage that still reads) is left out.
    init(readingFrom db: Database) {
        func text(_ row: Row, _ column: String) -> String? { String.fromDatabaseValue(row[column] as DatabaseValue) }
        let pending = try? Row.fetchAll(db, sql: "SELECT key, value, timestamp FROM key_value WHERE pending = 1")
        keyValues = (pending ?? []).compactMap { row in
            let value = row["value"] as DatabaseValue
            guard let key = text(row, "key"), value.isNull || text(row, "value") != nil,
                let timestamp = Double.fromDatabaseValue(row["timestamp"] as DatabaseValue)
            else { return nil }
            return (key, text(row, "value"), timestamp)
        }
        let queued = try? Row.fetchAll(db, sql: "SELECT item_id, operation FROM outbox ORDER BY sequence")
        operations = (queued ?? []).compactMap { row in
            guard let item = text(row, "item_id"), let operation = text(row, "operation") else { return nil }
            return (item, operation)
        }
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
