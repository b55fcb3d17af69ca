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
}
