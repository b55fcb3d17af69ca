import Foundation
import GRDB
import GRDBSQLite

/// The values of a statement's parameters, bound one after another with SQLite's own calls.
///
/// A save or an import writes one row per object with a dozen parameters; binding them here skips the boxing of
/// GRDB's `StatementArguments` (an existential per value, an array per row), which cost more than SQLite's insert.
struct DirectBindings {
    private let handle: OpaquePointer
    private var index: CInt = 1
    /// The first bind SQLite refused (a value over its length limit, no memory, a parameter past the statement's):
    /// the statement is not run, since the refused parameter would be stored as NULL.
    fileprivate private(set) var refusal: CInt?

    fileprivate init(_ handle: OpaquePointer) { self.handle = handle }

    mutating func bindNull() {
        let handle = handle
        bind { sqlite3_bind_null(handle, $0) }
    }

    mutating func bind(_ number: Int64) {
        let handle = handle
        bind { sqlite3_bind_int64(handle, $0, number) }
    }

    mutating func bind(_ number: Double) {
        let handle = handle
        bind { sqlite3_bind_double(handle, $0, number) }
    }

    mutating func bind(text: String) {
        let handle = handle
        var text = text
        text.withUTF8 { bytes in
            bind { index in
                sqlite3_bind_text(
                    handle, index, bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                    CInt(bytes.count), directTransient)
            }
        }
    }

    mutating func bind(bytes data: Data) {
        let handle = handle
        data.withUnsafeBytes { bytes in
            bind { index in
                // An empty blob is a blob, not NULL: SQLite binds a zero-length blob for a non-nil pointer.
                sqlite3_bind_blob(
                    handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, CInt(bytes.count),
                    directTransient)
            }
        }
    }

    /// Binds the 16 bytes of `uuid`.
    mutating func bind(_ uuid: UUID) {
        let handle = handle
        withUnsafeBytes(of: uuid.uuid) { bytes in
            bind { sqlite3_bind_blob(handle, $0, bytes.baseAddress, 16, directTransient) }
        }
    }

    mutating func bind(_ value: DatabaseValue) {
        switch value.storage {
        case .null: bindNull()
        case .int64(let number): bind(number)
        case .double(let number): bind(number)
        case .string(let text): bind(text: text)
        case .blob(let data): bind(bytes: data)
        }
    }

    private mutating func bind(_ call: (CInt) -> CInt) {
        let code = call(index)
        if code != SQLITE_OK, refusal == nil { refusal = code }
        index += 1
    }

    /// Throws the first refused bind, naming the parameter's statement.
    fileprivate func check(_ statement: Statement) throws {
        guard let refusal else { return }
        let message = String(cString: sqlite3_errstr(refusal))
        sqlite3_clear_bindings(handle)
        throw DatabaseError(
            resultCode: ResultCode(rawValue: refusal), message: "a parameter was refused: \(message)",
            sql: statement.sql)
    }
}

/// SQLite copies the bytes before the bind returns.
private let directTransient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

extension Statement {
    /// Runs a statement that returns no rows, its parameters bound by `bind` (``DirectBindings``).
    /// - Throws: GRDB's `DatabaseError` for SQLite's refusal (a constraint, a full disk), with the statement's SQL.
    func run(_ bind: (inout DirectBindings) throws -> Void) throws {
        let handle = sqliteStatement
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        var bindings = DirectBindings(handle)
        try bind(&bindings)
        try bindings.check(self)
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW { code = sqlite3_step(handle) }
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(handle)))
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
        }
        sqlite3_reset(handle)
    }
}

/// A row of a statement stepped with SQLite's own calls (``Statement/forEachRow(_:_:)``), read column by column
/// without GRDB's generic decoding, which costs a metadata lookup a value.
///
/// A column is read through its `sqlite3_value` (`sqlite3_column_value`), asked its type and then its contents.
/// Each `sqlite3_column_*` call checks the statement, enters the connection's mutex and checks for a failed
/// allocation on the way out; two of them a column were a fifth of SQLite's time in a large fetch. The value is
/// "unprotected" (SQLite's term): safe here, where one thread uses the connection and reads each value as the type it
/// has, before the statement steps again.
struct DirectRow: RowReading {
    fileprivate let handle: OpaquePointer

    private func value(at index: Int) -> OpaquePointer? { sqlite3_column_value(handle, CInt(index)) }

    func databaseValue(at index: Int) -> DatabaseValue {
        let value = value(at: index)
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER:
            return sqlite3_value_int64(value).databaseValue
        case SQLITE_FLOAT:
            return sqlite3_value_double(value).databaseValue
        case SQLITE_TEXT:
            guard let text = sqlite3_value_text(value) else { return "".databaseValue }
            let count = Int(sqlite3_value_bytes(value))
            return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self).databaseValue
        case SQLITE_BLOB:
            guard let bytes = sqlite3_value_blob(value) else { return Data().databaseValue }
            let count = Int(sqlite3_value_bytes(value))
            return count > 0 ? Data(bytes: bytes, count: count).databaseValue : Data().databaseValue
        default:
            return .null
        }
    }

    /// Appends the value of a column that holds an attribute of `type` as SQLite stores it plainly (an integer, a
    /// Boolean, a double, a date as seconds, text), read with SQLite's typed call; `false`, appending nothing, for
    /// anything else (no value, another storage class), which ``databaseValue(at:)`` and the attribute's own
    /// conversion answer.
    func appendPlainValue(at index: Int, type: AttributeType, to sink: inout some RecordValueSink) -> Bool {
        let value = value(at: index)
        let storage = sqlite3_value_type(value)
        switch type {
        case .integer16, .integer32, .integer64:
            guard storage == SQLITE_INTEGER else { return false }
            sink.appendInteger(sqlite3_value_int64(value))
        case .boolean:
            guard storage == SQLITE_INTEGER else { return false }
            sink.appendBoolean(sqlite3_value_int64(value) != 0)
        case .double:
            guard storage == SQLITE_FLOAT else { return false }
            sink.appendDouble(sqlite3_value_double(value))
        case .date:
            guard storage == SQLITE_FLOAT else { return false }
            sink.appendDate(sqlite3_value_double(value))
        case .string:
            guard storage == SQLITE_TEXT, let text = sqlite3_value_text(value) else { return false }
            let count = Int(sqlite3_value_bytes(value))
            sink.appendText(UnsafeBufferPointer(start: text, count: count))
        default:
            return false
        }
        return true
    }

    /// The 16 bytes of a UUID column as ``ManagedObjectID``'s words (big-endian); `nil` for anything else.
    func idWords(at index: Int) -> (UInt64, UInt64)? {
        let value = value(at: index)
        guard sqlite3_value_type(value) == SQLITE_BLOB, let bytes = sqlite3_value_blob(value),
            sqlite3_value_bytes(value) == 16
        else { return nil }
        return (
            UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)),
            UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        )
    }
}

/// A row whose columns are read by index: GRDB's `Row`, or a ``DirectRow``.
protocol RowReading {
    func databaseValue(at index: Int) -> DatabaseValue
    /// Appends the value of a column that holds an attribute of `type` plainly to `sink`, when the row can read it
    /// without a ``databaseValue(at:)`` first; `false` otherwise.
    func appendPlainValue(at index: Int, type: AttributeType, to sink: inout some RecordValueSink) -> Bool
}

extension RowReading {
    func appendPlainValue(at index: Int, type: AttributeType, to sink: inout some RecordValueSink) -> Bool { false }
}

extension Row: RowReading {
    func databaseValue(at index: Int) -> DatabaseValue { self[index] }
}

extension Statement {
    /// Runs a query, its parameters bound by `bind`, handing each row to `body` as it is stepped to.
    /// - Throws: GRDB's `DatabaseError` for SQLite's refusal, with the statement's SQL; whatever `body` throws.
    func forEachRow(_ bind: (inout DirectBindings) throws -> Void, _ body: (DirectRow) throws -> Void) throws {
        let handle = sqliteStatement
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        defer { sqlite3_reset(handle) }
        var bindings = DirectBindings(handle)
        try bind(&bindings)
        try bindings.check(self)
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW {
            try body(DirectRow(handle: handle))
            code = sqlite3_step(handle)
        }
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(handle)))
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
        }
    }
}
