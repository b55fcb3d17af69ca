import CSQLiteSupport
import GRDB

extension Database {
    /// Empties the database in place, its schema and its content, even when its file is damaged (SQLite's
    /// documented reset of a corrupt database). The file stays where it is, so other connections to it, in this
    /// process or another, see an empty database rather than keep one that was moved away.
    ///
    /// Call it outside any transaction, with no statement of this connection under way (inside GRDB's
    /// `barrierWriteWithoutTransaction`, say).
    ///
    /// - Throws: `DatabaseError` with SQLite's result code when the reset fails (another statement under way, the
    ///   disk refusing the write).
    public func resetToEmpty() throws {
        guard let connection = sqliteConnection else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the connection is closed")
        }
        let code = csqlite_reset_database(UnsafeMutableRawPointer(connection))
        clearSchemaCache()
        guard code == 0 else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "the database could not be reset")
        }
    }

    /// Empties the database file at `path` as ``resetToEmpty()`` does, through a connection of its own: for a file
    /// too damaged to open (not a database at all).
    ///
    /// - Throws: `DatabaseError` with SQLite's result code when the file cannot be opened or reset.
    public static func resetToEmpty(fileAt path: String) throws {
        let code = csqlite_reset_database_file(path)
        guard code == 0 else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "the database could not be reset")
        }
    }
}
