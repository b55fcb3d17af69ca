import Foundation
import GRDB
import Logging
import SQLiteSupport

extension ContainerSync {
    /// Opens the container's state database. One that SQLite finds damaged (not a database, a corrupt page: a
    /// failing disk, a file overwritten) is copied to `state.sqlite.damaged-<time>` (its write-ahead log beside it)
    /// and emptied where it is (removed, should SQLite fail to empty it): the database is the engine's memory of
    /// what it agreed on with the service, not the only copy of anything but of what was made here and not yet sent
    /// (``UnsentWork``), which is read from it as far as it can be and kept. The first round then compares every file
    /// with the service's items, as a device set up again does: a file where the service has an item is that
    /// item's, its content either the same, an older version of it, or an edit made here; nothing here is deleted.
    static func openState(of layout: ContainerLayout, logger: Logger) throws -> LocalStateStore {
        do {
            return try LocalStateStore(url: layout.stateDatabase)
        } catch  where isDamage(error) {
            let database = layout.stateDatabase.path
            let copy = damagedCopy(of: layout)
            LocalStateStore.copy(databaseAt: database, to: copy)
            let unsent = UnsentWork(readingDatabaseAt: database)
            do {
                // Emptied in place, as a round does (see resetDamagedState(after:)), for other processes' sake.
                try Database.resetToEmpty(fileAt: database)
            } catch {
                logger.warning(
                    "the damaged state database could not be emptied; removed", metadata: ["error": "\(error)"])
                let files = FileManager.default
                try files.removeItem(atPath: database)
                try? files.removeItem(atPath: database + "-wal")
                try? files.removeItem(atPath: database + "-shm")
            }
            logger.error(
                "the state database is damaged: emptied, and the engine starts afresh from the disk and the service",
                metadata: ["error": "\(error)", "copied to": "\(copy.path)"])
            let state = try LocalStateStore(url: layout.stateDatabase)
            try state.restore(unsent)
            return state
        }
    }

    /// Whether `error` is SQLite finding the state database damaged: not a database, or a corrupt page.
    static func isDamage(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return [.SQLITE_NOTADB, .SQLITE_CORRUPT].contains(error.resultCode)
    }

    /// Where a damaged state database is kept for a look: `state.sqlite.damaged-<milliseconds since 1970>`.
    static func damagedCopy(of layout: ContainerLayout) -> URL {
        let stamp = Int64(Date().timeIntervalSince1970 * 1000)
        return URL(fileURLWithPath: layout.stateDatabase.path + ".damaged-\(stamp)")
    }

    /// Empties the state database a round found damaged (a corrupt page deeper in than opening reads), keeping a
    /// copy beside it, and forgets what this sync remembered of it: the next round starts afresh, as after a
    /// damaged database moved aside at opening (``openState(of:logger:)``).
    func resetDamagedState(after error: any Error) throws {
        let copy = Self.damagedCopy(of: layout)
        try state.resetToEmpty(keepingCopyAt: copy)
        unreadable = nil
        logger.error(
            "the state database is damaged: emptied, and the engine starts afresh from the disk and the service",
            metadata: ["error": "\(error)", "copied to": "\(copy.path)"])
    }
}
