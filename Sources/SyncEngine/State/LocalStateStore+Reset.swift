import Foundation
import GRDB
import SQLiteSupport

extension LocalStateStore {
    /// Empties the database in place, even a damaged one, and makes its tables again: what the engine knew is gone,
    /// and it starts afresh as a device set up again does. A copy of the file as it was (and of its write-ahead
    /// log) is kept first at `copy` (and `copy` + `-wal`), when the database is a file, for a look.
    ///
    /// The file is emptied where it is, not replaced: other connections to it (an app's, reading the engine's
    /// state) see the empty database, and none of them is left with a file moved away whose write-ahead log has the
    /// new one's name.
    /// - Throws: SQLite's error when the reset or the migration fails (the disk refusing the write); the copy's
    ///   failure only leaves it out.
    func resetToEmpty(keepingCopyAt copy: URL) throws {
        try cache.emptying {
            try pool.barrierWriteWithoutTransaction { db in
                if let path = (pool as? DatabasePool)?.path { Self.copy(databaseAt: path, to: copy) }
                try db.resetToEmpty()
            }
        }
        try Self.migrator.migrate(pool)
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
