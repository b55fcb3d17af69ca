import Foundation
import GRDB
import Logging

extension ContainerSync {
    /// Opens the container's state database. One that SQLite finds damaged (not a database, a corrupt page: a
    /// failing disk, a file overwritten) is moved aside as `state.sqlite.damaged-<time>` (its write-ahead log
    /// beside it) and a new one made: the database is the engine's memory of what it agreed on with the service,
    /// not the only copy of anything. The first round then compares every file with the service's items, as a
    /// device set up again does: a file where the service has an item is that item's, its content either the same,
    /// an older version of it, or an edit made here; nothing here is deleted.
    static func openState(of layout: ContainerLayout, logger: Logger) throws -> LocalStateStore {
        do {
            return try LocalStateStore(url: layout.stateDatabase)
        } catch let error as DatabaseError where [.SQLITE_NOTADB, .SQLITE_CORRUPT].contains(error.resultCode) {
            let stamp = Int64(Date().timeIntervalSince1970 * 1000)
            let database = layout.stateDatabase.path
            let aside = database + ".damaged-\(stamp)"
            let files = FileManager.default
            try files.moveItem(atPath: database, toPath: aside)
            if files.fileExists(atPath: database + "-wal") {
                try files.moveItem(atPath: database + "-wal", toPath: aside + "-wal")
            }
            try? files.removeItem(atPath: database + "-shm")
            logger.error(
                "the state database is damaged: moved aside, and the engine starts afresh from the disk and the service",
                metadata: ["error": "\(error)", "moved to": "\(aside)"])
            return try LocalStateStore(url: layout.stateDatabase)
        }
    }
}
