import Foundation
import Logging
import NIOSSL
import PostgresNIO
import UbiquityProtocol

/// A ``MetadataStore`` in PostgreSQL, shared by any number of service nodes.
///
/// Every table is keyed by account and container first. Each write is one transaction on a pooled connection, and
/// writes to one container take that container's row lock first (`SELECT … FOR UPDATE`): they run one at a time,
/// whichever node runs them, so what a write reads (an item, its path's neighbours, the feed's latest sequence) is
/// what it changes, and the feed's sequence numbers are taken and committed in order. A sequence object would not
/// do: its numbers are handed out at insert time and transactions commit out of order, so a reader could pass
/// number 8 while 7 is still uncommitted and never see 7. Writes that change which chunks an account has take the
/// account's row lock after the container's, so a commit that relies on a chunk and a removal that forgets it are
/// never interleaved. A transaction PostgreSQL aborts as a deadlock or serialization failure is run again.
public final class PostgresMetadataStore: MetadataStore {
    let client: PostgresClient
    let retention: VersionRetention
    let clock: @Sendable () -> Date
    let logger: Logger
    /// Where the database is, for messages (no password).
    let location: String
    /// The schema this store keeps its tables in.
    let schema: String
    /// Runs item operations on a container several to a transaction.
    let committer = PostgresItemCommitter()
    /// This node's identity among the nodes sharing the database; its connections' `application_name` is
    /// `ubiquity node <id>`, which is how an operator finds them in `pg_stat_activity`.
    public let node = UUID()
    private let running: Task<Void, Never>

    /// Connects to the database `url` names, creates its schema when missing and brings it to the current version.
    ///
    /// `url` is `postgres://USER:PASSWORD@HOST[:PORT]/DATABASE`, with optional parameters `schema` (the schema the
    /// tables live in; `public` by default), `sslmode` (`disable`, the default, or `require`) and `pool` (the most
    /// connections this node opens; 20 by default). Without a password in the URL, `UBIQUITY_DATABASE_PASSWORD` or
    /// `PGPASSWORD` gives it.
    public static func open(
        url: String, retention: VersionRetention = VersionRetention(),
        clock: @escaping @Sendable () -> Date = Date.init,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger = Logger(label: "ubiquity.postgres")
    ) async throws -> PostgresMetadataStore {
        let location = try Location(url: url, environment: environment)
        // One connection first, so that a wrong password or database is told at once and plainly (the pool would
        // retry with back-off for a minute, then report only that it gave up).
        do {
            let connection = try await PostgresConnection.connect(
                configuration: PostgresConnection.Configuration(
                    host: location.host, port: location.port, username: location.user, password: location.password,
                    database: location.database,
                    tls: location.requireTLS
                        ? .require(try NIOSSLContext(configuration: .makeClientConfiguration())) : .disable),
                id: 0, logger: logger)
            try await connection.close()
        } catch let error as PSQLError {
            let place = "\(location.host):\(location.port)/\(location.database)"
            if location.password == nil, error.code == .authMechanismRequiresPassword {
                throw PostgresStoreError(
                    "PostgreSQL at \(place) asks for a password: give it in UBIQUITY_DATABASE_PASSWORD (or the URL)")
            }
            throw PostgresStoreError(error, location: place)
        }
        let store = PostgresMetadataStore(location: location, retention: retention, clock: clock, logger: logger)
        try await store.migrate(schema: location.schema)
        return store
    }

    private init(
        location: Location, retention: VersionRetention, clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password,
            database: location.database, tls: location.requireTLS ? .require(.makeClientConfiguration()) : .disable)
        configuration.options.maximumConnections = location.poolSize
        configuration.options.additionalStartupParameters = [
            ("search_path", Self.quoted(location.schema)), ("application_name", "ubiquity node \(node)"),
        ]
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.retention = retention
        self.clock = clock
        self.logger = logger
        self.location = "\(location.host):\(location.port)/\(location.database)"
        self.schema = location.schema
        // Started at once (not scheduled), so that the pool runs before the first query asks it for a connection.
        running = Task.immediate { await client.run() }
    }

    deinit { running.cancel() }

    // MARK: Nodes

    /// How this node tells the others sharing the database of changes, and hears of theirs.
    public func makeClusterBus() -> PostgresClusterBus {
        PostgresClusterBus(store: self, logger: logger)
    }

    /// Where the feeds and key-value stores of `containers` are now.
    func latestTokens(of containers: [ContainerKey]) async throws
        -> [ContainerKey: (changes: ChangeToken, keyValues: ChangeToken)]
    {
        try await read { db in
            var tokens: [ContainerKey: (changes: ChangeToken, keyValues: ChangeToken)] = [:]
            for key in containers {
                let state = try await Self.containerState(key, in: db)
                tokens[key] = (
                    FeedToken(feed: .changes, epoch: state.epoch, sequence: state.feedSequence).token,
                    FeedToken(feed: .keyValues, epoch: state.epoch, sequence: state.keyValueSequence).token
                )
            }
            return tokens
        }
    }

    // MARK: Transactions

    /// Runs `body` in a read-write transaction, again (from the start) when PostgreSQL aborts it as a deadlock or a
    /// serialization failure, or when `retryingUniqueViolations` and a concurrent insert took a key first.
    func write<Value: Sendable>(
        retryingUniqueViolations: Bool = false, _ body: @escaping @Sendable (PostgresTransaction) async throws -> Value
    ) async throws -> Value {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await transaction(begin: "BEGIN", body)
            } catch let error as PSQLError {
                let state = error.serverInfo?[.sqlState]
                let retry = state == "40001" || state == "40P01" || (retryingUniqueViolations && state == "23505")
                guard retry, attempt < 8 else { throw PostgresStoreError(error, location: location) }
                logger.debug("transaction retried", metadata: ["sqlstate": "\(state ?? "")", "attempt": "\(attempt)"])
            }
        }
    }

    /// Runs `body` on one snapshot of the database (several statements that must agree, such as a feed position
    /// and the items it covers).
    func read<Value: Sendable>(_ body: @escaping @Sendable (PostgresTransaction) async throws -> Value)
        async throws -> Value
    {
        do {
            return try await transaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", body)
        } catch let error as PSQLError {
            throw PostgresStoreError(error, location: location)
        }
    }

    private func transaction<Value: Sendable>(
        begin: PostgresQuery, _ body: @escaping @Sendable (PostgresTransaction) async throws -> Value
    ) async throws -> Value {
        let logger = logger
        return try await client.withConnection { connection in
            let transaction = PostgresTransaction(connection: connection, logger: logger)
            // `BEGIN` goes without this task waiting for its answer (one wake-up saved): a connection runs what it is sent in
            // the order sent, so the body's first statement runs in the transaction. Its answer is checked before
            // the commit. (`BEGIN` fails only when the connection does, and then so does that first statement.)
            let begun: EventLoopFuture<PostgresQueryResult> = connection.query(begin, logger: logger)
            do {
                let value = try await body(transaction)
                _ = try await begun.get()
                try await transaction.run("COMMIT")
                return value
            } catch {
                _ = try? await begun.get()
                try? await transaction.run("ROLLBACK")
                throw error
            }
        }
    }

    // MARK: Schema

    /// Removes this store's schema and everything in it, for a schema made for one run (a benchmark's); the store
    /// holds nothing afterwards and is not to be used again. Refuses the default schema, `public`.
    public func dropSchema() async throws {
        guard schema != "public" else { throw PostgresStoreError("the schema public is not dropped") }
        try await write { db in try await db.run("DROP SCHEMA \(unescaped: Self.quoted(self.schema)) CASCADE") }
    }

    /// The schema's versions, each applied once, in order, in a transaction of its own together with its row in
    /// `ubiquity_schema`; nodes starting at once take turns on an advisory lock, so each version runs once.
    static let migrations: [(version: Int, statements: [PostgresQuery])] = [
        (
            1,
            [
                """
                CREATE TABLE account (
                    id TEXT PRIMARY KEY, name TEXT NOT NULL, name_key TEXT NOT NULL UNIQUE,
                    password_hash TEXT NOT NULL, quota_bytes BIGINT, used_bytes BIGINT NOT NULL DEFAULT 0,
                    created_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE device_token (
                    id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES account(id),
                    secret_hash BYTEA NOT NULL UNIQUE, device_id TEXT NOT NULL, device_name TEXT NOT NULL,
                    containers TEXT, created_at BIGINT NOT NULL, revoked_at BIGINT)
                """,
                "CREATE INDEX device_token_account ON device_token(account_id)",
                """
                CREATE TABLE chunk (
                    account_id TEXT NOT NULL, hash TEXT NOT NULL, size BIGINT NOT NULL,
                    PRIMARY KEY (account_id, hash))
                """,
                """
                CREATE TABLE container (
                    account_id TEXT NOT NULL, container_id TEXT NOT NULL, epoch TEXT NOT NULL,
                    feed_sequence BIGINT NOT NULL DEFAULT 0, kv_sequence BIGINT NOT NULL DEFAULT 0,
                    PRIMARY KEY (account_id, container_id))
                """,
                """
                CREATE TABLE item (
                    account_id TEXT NOT NULL, container_id TEXT NOT NULL, item_id TEXT NOT NULL,
                    path TEXT NOT NULL, path_key TEXT NOT NULL, kind TEXT NOT NULL, current_version TEXT,
                    is_deleted BOOLEAN NOT NULL,
                    PRIMARY KEY (account_id, container_id, item_id))
                """,
                """
                CREATE UNIQUE INDEX item_live_path ON item(account_id, container_id, path_key)
                    WHERE NOT is_deleted
                """,
                """
                CREATE TABLE folder (
                    account_id TEXT NOT NULL, container_id TEXT NOT NULL, path_key TEXT NOT NULL,
                    path TEXT NOT NULL, item_count BIGINT NOT NULL,
                    PRIMARY KEY (account_id, container_id, path_key))
                """,
                """
                CREATE TABLE version (
                    account_id TEXT NOT NULL, version_id TEXT NOT NULL, container_id TEXT NOT NULL,
                    item_id TEXT NOT NULL, record TEXT NOT NULL,
                    PRIMARY KEY (account_id, version_id))
                """,
                "CREATE INDEX version_item ON version(account_id, container_id, item_id)",
                """
                CREATE TABLE version_chunk (
                    account_id TEXT NOT NULL, version_id TEXT NOT NULL, hash TEXT NOT NULL,
                    PRIMARY KEY (account_id, version_id, hash))
                """,
                "CREATE INDEX version_chunk_hash ON version_chunk(account_id, hash)",
                """
                CREATE TABLE change (
                    account_id TEXT NOT NULL, container_id TEXT NOT NULL, sequence BIGINT NOT NULL,
                    body TEXT NOT NULL,
                    PRIMARY KEY (account_id, container_id, sequence))
                """,
                """
                CREATE TABLE kv_entry (
                    account_id TEXT NOT NULL, container_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT,
                    timestamp BIGINT NOT NULL, device_id TEXT NOT NULL, sequence BIGINT NOT NULL,
                    PRIMARY KEY (account_id, container_id, key))
                """,
                "CREATE INDEX kv_entry_sequence ON kv_entry(account_id, container_id, sequence)",
            ]
        ),
        (
            2,
            [
                """
                CREATE TABLE draft (
                    account_id TEXT NOT NULL, container_id TEXT NOT NULL, item_id TEXT NOT NULL,
                    version_id TEXT NOT NULL, chunk_count BIGINT NOT NULL, total BIGINT, grown_at BIGINT NOT NULL,
                    PRIMARY KEY (account_id, container_id, item_id))
                """,
                """
                CREATE TABLE draft_chunk (
                    account_id TEXT NOT NULL, container_id TEXT NOT NULL, item_id TEXT NOT NULL,
                    position BIGINT NOT NULL, hash TEXT NOT NULL, size BIGINT NOT NULL,
                    PRIMARY KEY (account_id, container_id, item_id, position))
                """,
            ]
        ),
    ]

    /// The newest schema version this build knows.
    public static var schemaVersion: Int { migrations.last!.version }

    /// Creates `schema` when missing and applies the migrations it lacks.
    /// - Throws: ``PostgresStoreError`` when the schema is newer than this build knows.
    private func migrate(schema: String) async throws {
        try await write(retryingUniqueViolations: true) { db in
            try await db.run("CREATE SCHEMA IF NOT EXISTS \(unescaped: Self.quoted(schema))")
            try await db.run("SELECT pg_advisory_xact_lock(hashtext(\(schema)))")
            try await db.run(
                """
                CREATE TABLE IF NOT EXISTS ubiquity_schema (
                    version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                """)
        }
        while true {
            let applied: Int? = try await write { db in
                try await db.run("SELECT pg_advisory_xact_lock(hashtext(\(schema)))")
                let current =
                    try await db.value("SELECT max(version) FROM ubiquity_schema", as: Int?.self).flatMap { $0 } ?? 0
                if current > Self.schemaVersion {
                    throw PostgresStoreError(
                        "the database's schema is at version \(current), newer than this build's "
                            + "\(Self.schemaVersion): upgrade this node")
                }
                guard let next = Self.migrations.first(where: { $0.version > current }) else { return nil }
                for statement in next.statements { try await db.run(statement) }
                try await db.run("INSERT INTO ubiquity_schema (version) VALUES (\(next.version))")
                return next.version
            }
            if applied == nil { return }
            logger.info("database schema migrated", metadata: ["version": "\(applied!)"])
        }
    }

    /// `name` as a quoted SQL identifier.
    static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Where the database is, as a `postgres://` URL gives it.
    struct Location: Sendable {
        var host: String
        var port: Int
        var user: String
        var password: String?
        var database: String
        var schema = "public"
        var requireTLS = false
        var poolSize = 20

        init(url: String, environment: [String: String] = [:]) throws {
            guard let components = URLComponents(string: url),
                components.scheme == "postgres" || components.scheme == "postgresql",
                let host = components.host, !host.isEmpty
            else {
                throw PostgresStoreError("\(Self.redacted(url)) is not a postgres://USER@HOST/DATABASE URL")
            }
            self.host = host
            port = components.port ?? 5432
            guard let user = components.user, !user.isEmpty else {
                throw PostgresStoreError("\(Self.redacted(url)) names no user")
            }
            self.user = user.removingPercentEncoding ?? user
            password =
                components.password.map { $0.removingPercentEncoding ?? $0 }
                ?? environment["UBIQUITY_DATABASE_PASSWORD"] ?? environment["PGPASSWORD"]
            let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
            guard !path.isEmpty, !path.contains("/") else {
                throw PostgresStoreError("\(Self.redacted(url)) names no database")
            }
            database = path
            for item in components.queryItems ?? [] {
                let value = item.value ?? ""
                switch item.name {
                case "schema":
                    guard !value.isEmpty, value.utf8.count <= 63, !value.contains("\0") else {
                        throw PostgresStoreError("schema must be a name of 1 to 63 bytes")
                    }
                    schema = value
                case "sslmode":
                    guard ["disable", "require"].contains(value) else {
                        throw PostgresStoreError("sslmode must be disable or require, not \(value)")
                    }
                    requireTLS = value == "require"
                case "pool":
                    // One connection listens to the other nodes for as long as the node runs.
                    guard let size = Int(value), (2...1000).contains(size) else {
                        throw PostgresStoreError("pool must be a number of connections from 2 to 1000")
                    }
                    poolSize = size
                default:
                    throw PostgresStoreError("unknown parameter \(item.name) in the database URL")
                }
            }
        }

        /// `url` without its password, to name it in messages.
        static func redacted(_ url: String) -> String {
            guard var components = URLComponents(string: url), components.password != nil else { return url }
            components.password = "…"
            return components.string ?? url
        }
    }
}

/// A PostgreSQL metadata store that cannot be opened as configured.
public struct PostgresStoreError: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// PostgreSQL's SQLSTATE, when the error is the server's.
    let sqlState: String?

    init(_ description: String) {
        self.description = description
        sqlState = nil
    }

    /// `error` as a message for a log line: readably when it is PostgreSQL's.
    static func describing(_ error: any Error, location: String) -> String {
        if let error = error as? PSQLError { return PostgresStoreError(error, location: location).description }
        return "\(error)"
    }

    /// What PostgreSQL (or the way to it) answered, readably: the server's message and SQLSTATE, or why the
    /// connection failed. (`PSQLError`'s own description says nothing, to keep queries out of logs.)
    init(_ error: PSQLError, location: String) {
        sqlState = error.serverInfo?[.sqlState]
        if let message = error.serverInfo?[.message] {
            let state = error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
            description = "PostgreSQL at \(location): \(message)\(state)"
        } else {
            let cause = error.underlying.map { ": \($0)" } ?? ""
            description = "cannot use PostgreSQL at \(location): \(error.code)\(cause)"
        }
    }
}

/// One transaction's connection: statements, and rows decoded.
struct PostgresTransaction: Sendable {
    let connection: PostgresConnection
    let logger: Logger

    func run(_ query: PostgresQuery) async throws {
        _ = try await connection.query(query, logger: logger)
    }

    /// Sends `query` and returns at once; its answer comes in the future returned. Statements sent after it run
    /// after it.
    func send(_ query: PostgresQuery) -> EventLoopFuture<PostgresQueryResult> {
        connection.query(query, logger: logger)
    }

    /// The rows of `statement`, prepared on this connection the first time it runs there.
    func execute<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [Statement.Row] {
        var rows: [Statement.Row] = []
        for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
        return rows
    }

    /// The rows `query` returns, each decoded as `type` (a tuple of two or more columns' types).
    func rows<each Column: PostgresDecodable & Sendable>(
        _ query: PostgresQuery, as type: (repeat each Column).Type
    ) async throws -> [(repeat each Column)] {
        var rows: [(repeat each Column)] = []
        for try await row in try await connection.query(query, logger: logger) { rows.append(try row.decode(type)) }
        return rows
    }

    /// The first row `query` returns, decoded as `type` (a tuple of two or more columns' types).
    func row<each Column: PostgresDecodable & Sendable>(
        _ query: PostgresQuery, as type: (repeat each Column).Type
    ) async throws -> (repeat each Column)? {
        try await rows(query, as: type).first
    }

    /// The one column of the rows `query` returns, decoded as `type`.
    func values<Value: PostgresDecodable & Sendable>(_ query: PostgresQuery, as type: Value.Type) async throws
        -> [Value]
    {
        var values: [Value] = []
        for try await row in try await connection.query(query, logger: logger) {
            values.append(try row.decode(Value.self))
        }
        return values
    }

    /// The one column of the first row `query` returns, decoded as `type`.
    func value<Value: PostgresDecodable & Sendable>(_ query: PostgresQuery, as type: Value.Type) async throws
        -> Value?
    {
        try await values(query, as: type).first
    }
}
