import Crypto
import Foundation
import GRDB
import PostgresNIO
import UbiquityProtocol

/// Copies an embedded deployment (a data directory's `ubiquity.sqlite` and `chunks/`) to PostgreSQL and, when
/// given, S3-compatible storage — `ubiquity server migrate`.
///
/// Chunks go first, then the metadata, table by table in key order, so the target never records a chunk it does
/// not have. Every row keeps its values: accounts, device tokens (their hashes), containers' epochs and feed
/// positions, so devices keep their tokens and their feed tokens stay valid. Each row is written "insert, or update
/// to the source's values", and a chunk the target has is not sent again, so a run that was interrupted is simply
/// run again. The service on the data directory must be stopped while it runs.
public struct DeploymentMigration: Sendable {
    /// What a run did.
    public struct Report: Sendable {
        /// Rows copied, by table.
        public var rows: [String: Int] = [:]
        /// Chunks sent to the target chunk store, and those it had already.
        public var chunksCopied = 0
        public var chunksPresent = 0
        /// What does not match: a chunk missing or damaged, a table whose row counts differ.
        public var problems: [String] = []
    }

    let source: URL
    let database: String
    let chunkStore: String?
    let environment: [String: String]

    /// - Parameters:
    ///   - source: The embedded deployment's data directory.
    ///   - database: The target `postgres://…` URL (``PostgresMetadataStore/open(url:retention:clock:environment:logger:)``).
    ///   - chunkStore: The target `s3://…` URL, or `nil` to leave the chunks in the data directory.
    public init(
        from source: URL, toDatabase database: String, toChunks chunkStore: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.source = source
        self.database = database
        self.chunkStore = chunkStore
        self.environment = environment
    }

    /// Copies everything, then checks the target: every version's chunks present (and, with `verify`, read back
    /// and hashed), every table with as many rows as the source's. `progress` gets a line now and then.
    public func run(verify: Bool = false, progress: @escaping @Sendable (String) -> Void = { _ in }) async throws
        -> Report
    {
        let path = source.appendingPathComponent("ubiquity.sqlite", isDirectory: false).path
        guard FileManager.default.fileExists(atPath: path) else {
            throw PostgresStoreError("\(source.path) holds no ubiquity.sqlite: not a data directory")
        }
        _ = try SQLiteMetadataStore(path: path)  // brings the source's schema up to date first
        var configuration = Configuration()
        configuration.readonly = true
        let reader = try DatabasePool(path: path, configuration: configuration)
        let target = try await PostgresMetadataStore.open(url: database, environment: environment)
        var report = Report()

        let sourceChunks = try FileChunkStore(root: source.appendingPathComponent("chunks", isDirectory: true))
        let targetChunks: (any ChunkStore)? =
            if let chunkStore { try await S3ChunkStore.open(url: chunkStore) } else { nil }
        if let targetChunks {
            try await copyChunks(from: reader, sourceChunks, to: targetChunks, report: &report, progress: progress)
        }
        for table in Self.tables {
            report.rows[table.name] = try await copy(table, from: reader, to: target, progress: progress)
        }
        try await check(reader, target, targetChunks ?? sourceChunks, verify: verify, report: &report)
        return report
    }

    // MARK: Chunks

    private func copyChunks(
        from reader: DatabasePool, _ source: FileChunkStore, to target: any ChunkStore, report: inout Report,
        progress: @Sendable (String) -> Void
    ) async throws {
        let total = try await reader.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM chunk") ?? 0 }
        var after = ("", "")
        while true {
            let page = try await reader.read { [after] db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT account_id, hash FROM chunk WHERE (account_id, hash) > (?, ?)
                        ORDER BY account_id, hash LIMIT 500
                        """, arguments: [after.0, after.1]
                ).map { ($0["account_id"] as String, $0["hash"] as String) }
            }
            guard let last = page.last else { break }
            for (accountText, hashText) in page {
                let (account, hash) = (try AccountID(accountText), try ChunkHash(hashText))
                if try await target.contains(hash, of: account) {
                    report.chunksPresent += 1
                    continue
                }
                guard let reader = try await source.read(hash, of: account, pieceSize: 1 << 20) else {
                    report.problems.append("chunk \(hash) of account \(account) is missing from the data directory")
                    continue
                }
                let upload = try await target.beginUpload(for: account)
                do {
                    for try await piece in reader { try piece.withUnsafeBytes { try upload.write($0) } }
                    try await upload.finish(expecting: hash)
                } catch {
                    upload.cancel()
                    throw error
                }
                report.chunksCopied += 1
            }
            after = last
            progress("chunks: \(report.chunksCopied + report.chunksPresent) of \(total)")
        }
    }

    // MARK: Tables

    /// One table as both drivers lay it out.
    struct Table: Sendable {
        enum Kind: Sendable { case text, integer, boolean, bytes }

        var name: String
        var columns: [(name: String, kind: Kind, nullable: Bool)]
        var key: [String]
    }

    static let tables: [Table] = [
        Table(
            name: "account",
            columns: [
                ("id", .text, false), ("name", .text, false), ("name_key", .text, false),
                ("password_hash", .text, false), ("quota_bytes", .integer, true), ("used_bytes", .integer, false),
                ("created_at", .integer, false),
            ], key: ["id"]),
        Table(
            name: "device_token",
            columns: [
                ("id", .text, false), ("account_id", .text, false), ("secret_hash", .bytes, false),
                ("device_id", .text, false), ("device_name", .text, false), ("containers", .text, true),
                ("created_at", .integer, false), ("revoked_at", .integer, true),
            ], key: ["id"]),
        Table(
            name: "container",
            columns: [
                ("account_id", .text, false), ("container_id", .text, false), ("epoch", .text, false),
                ("feed_sequence", .integer, false), ("kv_sequence", .integer, false),
            ], key: ["account_id", "container_id"]),
        Table(
            name: "chunk", columns: [("account_id", .text, false), ("hash", .text, false), ("size", .integer, false)],
            key: ["account_id", "hash"]),
        Table(
            name: "item",
            columns: [
                ("account_id", .text, false), ("container_id", .text, false), ("item_id", .text, false),
                ("path", .text, false), ("path_key", .text, false), ("kind", .text, false),
                ("current_version", .text, true), ("is_deleted", .boolean, false),
            ], key: ["account_id", "container_id", "item_id"]),
        Table(
            name: "folder",
            columns: [
                ("account_id", .text, false), ("container_id", .text, false), ("path_key", .text, false),
                ("path", .text, false), ("item_count", .integer, false),
            ], key: ["account_id", "container_id", "path_key"]),
        Table(
            name: "version",
            columns: [
                ("account_id", .text, false), ("version_id", .text, false), ("container_id", .text, false),
                ("item_id", .text, false), ("record", .text, false),
            ], key: ["account_id", "version_id"]),
        Table(
            name: "version_chunk",
            columns: [("account_id", .text, false), ("version_id", .text, false), ("hash", .text, false)],
            key: ["account_id", "version_id", "hash"]),
        Table(
            name: "change",
            columns: [
                ("account_id", .text, false), ("container_id", .text, false), ("sequence", .integer, false),
                ("body", .text, false),
            ], key: ["account_id", "container_id", "sequence"]),
        Table(
            name: "kv_entry",
            columns: [
                ("account_id", .text, false), ("container_id", .text, false), ("key", .text, false),
                ("value", .text, true), ("timestamp", .integer, false), ("device_id", .text, false),
                ("sequence", .integer, false),
            ], key: ["account_id", "container_id", "key"]),
    ]

    /// Copies `table` in pages of 500 rows in key order, each page one statement; returns how many rows.
    private func copy(
        _ table: Table, from reader: DatabasePool, to target: PostgresMetadataStore,
        progress: @Sendable (String) -> Void
    ) async throws -> Int {
        let columns = table.columns.map(\.name).joined(separator: ", ")
        let keys = table.key.joined(separator: ", ")
        let keyMarks = table.key.map { _ in "?" }.joined(separator: ", ")
        let updates = table.columns.map(\.name).filter { !table.key.contains($0) }
            .map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        let conflict = updates.isEmpty ? "DO NOTHING" : "DO UPDATE SET \(updates)"
        var after: [DatabaseValue]?
        var copied = 0
        while true {
            let rows = try await reader.read { [after] db -> [[DatabaseValue]] in
                let rows: [Row]
                if let after {
                    rows = try Row.fetchAll(
                        db,
                        sql: "SELECT \(columns) FROM \(table.name) WHERE (\(keys)) > (\(keyMarks)) "
                            + "ORDER BY \(keys) LIMIT 500",
                        arguments: StatementArguments(after.map { $0 as (any DatabaseValueConvertible)? }))
                } else {
                    rows = try Row.fetchAll(db, sql: "SELECT \(columns) FROM \(table.name) ORDER BY \(keys) LIMIT 500")
                }
                return rows.map { Array($0.databaseValues) }
            }
            guard let last = rows.last else { break }
            var bindings = PostgresBindings(capacity: rows.count * table.columns.count)
            var tuples: [String] = []
            for row in rows {
                var marks: [String] = []
                for (index, column) in table.columns.enumerated() {
                    try Self.bind(row[index], as: column, into: &bindings)
                    marks.append("$\(bindings.count)")
                }
                tuples.append("(\(marks.joined(separator: ", ")))")
            }
            let sql =
                "INSERT INTO \(table.name) (\(columns)) VALUES \(tuples.joined(separator: ", ")) "
                + "ON CONFLICT (\(keys)) \(conflict)"
            let query = PostgresQuery(unsafeSQL: sql, binds: bindings)
            try await target.write { db in try await db.run(query) }
            copied += rows.count
            after = table.key.map { key in last[table.columns.firstIndex { $0.name == key }!] }
            progress("\(table.name): \(copied) rows")
        }
        return copied
    }

    /// Binds one stored value as the PostgreSQL column's type.
    private static func bind(
        _ value: DatabaseValue, as column: (name: String, kind: Table.Kind, nullable: Bool),
        into bindings: inout PostgresBindings
    ) throws {
        if value.isNull {
            guard column.nullable else { throw PostgresStoreError("a \(column.name) is empty in the source") }
            switch column.kind {
            case .text: bindings.append(String?.none)
            case .integer: bindings.append(Int64?.none)
            case .boolean: bindings.append(Bool?.none)
            case .bytes: try bindings.append(Data?.none)
            }
            return
        }
        switch column.kind {
        case .text:
            guard let text = String.fromDatabaseValue(value) else { throw Self.malformed(column.name) }
            bindings.append(text)
        case .integer:
            guard let number = Int64.fromDatabaseValue(value) else { throw Self.malformed(column.name) }
            bindings.append(number)
        case .boolean:
            guard let flag = Bool.fromDatabaseValue(value) else { throw Self.malformed(column.name) }
            bindings.append(flag)
        case .bytes:
            guard let bytes = Data.fromDatabaseValue(value) else { throw Self.malformed(column.name) }
            try bindings.append(bytes)
        }
    }

    private static func malformed(_ column: String) -> PostgresStoreError {
        PostgresStoreError("a \(column) in the source is not of its column's type")
    }

    // MARK: Checking

    private func check(
        _ reader: DatabasePool, _ target: PostgresMetadataStore, _ chunks: any ChunkStore, verify: Bool,
        report: inout Report
    ) async throws {
        for table in Self.tables {
            let expected = try await reader.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table.name)") ?? 0
            }
            let found = try await target.read { db in
                try await db.value(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table.name)"), as: Int.self) ?? 0
            }
            if found != expected {
                report.problems.append("\(table.name) has \(found) rows in the database, \(expected) in the source")
            }
        }
        let used = try await target.read { db in
            try await db.rows("SELECT DISTINCT account_id, hash FROM version_chunk", as: (String, String).self)
        }
        for (accountText, hashText) in used {
            let (account, hash) = (try AccountID(accountText), try ChunkHash(hashText))
            guard verify else {
                if !(try await chunks.contains(hash, of: account)) {
                    report.problems.append("chunk \(hash) of account \(account) is missing from the chunk store")
                }
                continue
            }
            guard let reader = try await chunks.read(hash, of: account, pieceSize: 1 << 20) else {
                report.problems.append("chunk \(hash) of account \(account) is missing from the chunk store")
                continue
            }
            var digest = SHA256()
            do {
                for try await piece in reader { digest.update(data: piece) }
            } catch {
                report.problems.append("chunk \(hash) of account \(account) cannot be read: \(error)")
                continue
            }
            if Array(digest.finalize()) != hash.digest {
                report.problems.append("chunk \(hash) of account \(account) does not match its hash")
            }
        }
    }
}
