import Crypto
import Foundation
import Testing
import UbiquityProtocol
import UbiquityServer

// The fixtures of the storage contract suite (`StorageContractTests`): the drivers it runs against, a fresh
// temporary directory for each test, and an account's container to act in.

/// The storage drivers every contract test runs against. A new driver (PostgreSQL, say) is one more case here
/// and its branch in ``makeStores(in:retention:clock:)``; every test picks it up.
enum StorageDriverKind: String, CaseIterable, Codable, Sendable, CustomTestStringConvertible {
    /// ``SQLiteMetadataStore`` in a SQLite file and ``FileChunkStore`` in a folder beside it.
    case sqlite
    /// ``SQLiteMetadataStore`` and ``S3ChunkStore`` in the bucket of `UBIQUITY_S3_URL`, under a prefix of the test's
    /// own.
    case s3
    /// ``PostgresMetadataStore`` in the database of `UBIQUITY_POSTGRES_URL`, in a schema of the test's own, and
    /// ``FileChunkStore`` in a folder.
    case postgres

    var testDescription: String {
        switch self {
        case .sqlite: "SQLite + file chunks"
        case .s3: "SQLite + S3 chunks"
        case .postgres: "PostgreSQL + file chunks"
        }
    }

    /// The drivers of the metadata tests: SQLite's, and PostgreSQL's when `UBIQUITY_POSTGRES_URL` names a server
    /// (`.ci/run` starts one) and always in CI, where a missing server fails its tests instead of leaving them out.
    /// (The S3 driver's metadata store is SQLite's, tested once.)
    static var available: [StorageDriverKind] {
        StorageFixtures.postgresURL != nil || StorageFixtures.isCI ? [.sqlite, .postgres] : [.sqlite]
    }

    /// The drivers of the chunk-store tests: the S3 one too when `UBIQUITY_S3_URL` names a server (`.ci/run` starts
    /// one), and always in CI. (The PostgreSQL driver's chunk store is the folder one, tested once.)
    static var chunkDrivers: [StorageDriverKind] {
        StorageFixtures.s3URL != nil || StorageFixtures.isCI ? [.sqlite, .s3] : [.sqlite]
    }

    /// Opens the driver's stores on `directory`, creating them when it is empty. Opening again on the same
    /// directory opens the same stored data, as a restarted service does.
    /// - Parameters:
    ///   - retention: How long old versions are kept (by default far longer than any test reaches).
    ///   - clock: The time retention is measured against and records are stamped with.
    func makeStores(
        in directory: URL, retention: VersionRetention = StorageFixtures.retention,
        clock: @escaping @Sendable () -> Date = StorageFixtures.clock
    ) async throws -> StorageUnderTest {
        switch self {
        case .sqlite:
            let metadata = try SQLiteMetadataStore(
                path: directory.appendingPathComponent("metadata.sqlite").path, retention: retention, clock: clock)
            let chunks = try FileChunkStore(root: directory.appendingPathComponent("chunks", isDirectory: true))
            let incoming = chunks.root.appendingPathComponent("incoming", isDirectory: true)
            return StorageUnderTest(
                metadata: metadata, chunks: chunks,
                unfinishedUploads: {
                    try FileManager.default.contentsOfDirectory(atPath: incoming.path).count
                        + chunks.unfinishedUploadsInMemory
                })
        case .s3:
            let metadata = try SQLiteMetadataStore(
                path: directory.appendingPathComponent("metadata.sqlite").path, retention: retention, clock: clock)
            let url = try #require(StorageFixtures.s3URL, "UBIQUITY_S3_URL names no S3 server (.ci/run starts one)")
            let chunks = try await S3ChunkStore.open(url: url, prefix: "tests/\(directory.lastPathComponent)")
            return StorageUnderTest(metadata: metadata, chunks: chunks, unfinishedUploads: { chunks.unfinishedUploads })
        case .postgres:
            let metadata = try await StorageFixtures.postgresStore(
                schema: directory.path, retention: retention, clock: clock)
            let chunks = try FileChunkStore(root: directory.appendingPathComponent("chunks", isDirectory: true))
            let incoming = chunks.root.appendingPathComponent("incoming", isDirectory: true)
            return StorageUnderTest(
                metadata: metadata, chunks: chunks,
                unfinishedUploads: {
                    try FileManager.default.contentsOfDirectory(atPath: incoming.path).count
                        + chunks.unfinishedUploadsInMemory
                })
        }
    }

    /// Runs `body` with the driver's stores opened in a fresh temporary directory, removed afterwards (with the
    /// PostgreSQL schema, for that driver).
    func withStores<T>(
        retention: VersionRetention = StorageFixtures.retention, _ body: (StorageUnderTest) async throws -> T
    ) async throws -> T {
        try await withTemporaryDirectory { directory in
            let stores = try await makeStores(in: directory, retention: retention)
            let result: Result<T, any Error>
            do { result = .success(try await body(stores)) } catch { result = .failure(error) }
            try? await (stores.metadata as? PostgresMetadataStore)?.dropSchema()
            return try result.get()
        }
    }
}

/// One driver's stores, as a test sees them.
struct StorageUnderTest: Sendable {
    /// Accounts, tokens, chunk records, items, feeds and key-value stores.
    var metadata: any MetadataStore
    /// Chunk bytes.
    var chunks: any ChunkStore
    /// How many uploads the chunk store holds that were neither finished nor dropped (for ``FileChunkStore``:
    /// those in memory and the files in `incoming/`).
    var unfinishedUploads: @Sendable () throws -> Int
}

/// Runs `body` with a new empty directory under the system's temporary directory, and removes it afterwards.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("ubiquity-storage-contract-\(UUID().uuidString.lowercased())", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

enum StorageFixtures {
    /// The S3 server of the S3 driver's tests, `s3://BUCKET?endpoint=…` (see ``S3Client/Configuration``).
    static let s3URL = ProcessInfo.processInfo.environment["UBIQUITY_S3_URL"].flatMap { $0.isEmpty ? nil : $0 }
    /// The PostgreSQL database of the PostgreSQL driver's tests, `postgres://USER:PASSWORD@HOST:PORT/DATABASE`.
    static let postgresURL = ProcessInfo.processInfo.environment["UBIQUITY_POSTGRES_URL"].flatMap {
        $0.isEmpty ? nil : $0
    }
    /// Whether the tests run in CI (`CI=true`), where every driver must be there.
    static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"

    /// A PostgreSQL store in a schema named after `schema` (any text: a directory's path, say) in the database of
    /// `UBIQUITY_POSTGRES_URL`; opening the same schema again opens the same data, as another node does.
    static func postgresStore(
        schema: String, retention: VersionRetention = retention, clock: @escaping @Sendable () -> Date = clock
    ) async throws -> PostgresMetadataStore {
        try await PostgresMetadataStore.open(
            url: try postgresDatabase(schema: schema), retention: retention, clock: clock)
    }

    /// The database of `UBIQUITY_POSTGRES_URL` with a schema named after `schema` and a pool of 4 connections, as a
    /// node's `database` setting takes it: the same text always names the same schema, so a store and a service
    /// opened on it share their data.
    static func postgresDatabase(schema: String) throws -> String {
        let url = try #require(postgresURL, "UBIQUITY_POSTGRES_URL names no PostgreSQL server (.ci/run starts one)")
        let name = "t_" + SHA256.hash(data: Data(schema.utf8)).prefix(12).map { String(format: "%02x", $0) }.joined()
        return url + "?schema=\(name)&pool=4"
    }

    /// The time the stores' clock says it is: a whole second, so every stored date survives a round trip exactly.
    static let now = Date(timeIntervalSinceReferenceDate: 800_000_000)
    /// A clock stopped at ``now``.
    static let clock: @Sendable () -> Date = { now }
    /// The retention the contract tests run with unless they test retention: the operator's default count, and
    /// no age limit (the tests' dates are near ``now`` anyway).
    static let retention = VersionRetention(maximumCount: 50, maximumAge: nil)

    static let laptop = SavingDevice(id: DeviceID(), name: "Ada's laptop")
    static let desktop = SavingDevice(id: DeviceID(), name: "Ada's desktop")

    /// `seconds` after ``now``.
    static func date(_ seconds: TimeInterval) -> Date { now.addingTimeInterval(seconds) }

    /// A random hash, standing for content no other test has.
    static func randomHash() -> ChunkHash {
        try! ChunkHash(digest: (0..<32).map { _ in UInt8.random(in: .min ... .max) })
    }

    /// The SHA-256 of `bytes`, as a chunk hash.
    static func sha256(_ bytes: some Sequence<UInt8>) -> ChunkHash {
        try! ChunkHash(digest: SHA256.hash(data: Array(bytes)))
    }

    static let container = try! ContainerID("TEAM.com.example.grocery")
}

/// A version's content as the metadata store sees it: its chunks and its content hash.
struct Content: Hashable, Sendable {
    var chunks: [ChunkReference]
    var hash: ChunkHash

    /// New content made of chunks of these sizes, none of which any account has yet.
    static func random(sizes: [Int64] = [10]) -> Content {
        Content(
            chunks: sizes.map { ChunkReference(hash: StorageFixtures.randomHash(), size: $0) },
            hash: StorageFixtures.randomHash())
    }
}

/// What a container holds and says, to check an operation that was refused changed nothing.
struct ContainerSnapshot: Hashable {
    var list: ItemListResponse
    var details: [ItemDetail]
    var changes: [Change]
}

/// An account's container in the stores under test, and the helpers the contract tests act through.
struct StorageScene: Sendable {
    var storage: StorageUnderTest
    var account: AccountRecord
    var container: ContainerKey

    var metadata: any MetadataStore { storage.metadata }

    /// A new account named `name` and its container `container`.
    static func make(
        _ storage: StorageUnderTest, account name: String = "ada", quotaBytes: Int64? = nil,
        container: ContainerID = StorageFixtures.container
    ) async throws -> StorageScene {
        let account = try await storage.metadata.createAccount(
            name: name, passwordHash: "$2b$12$not-a-real-hash", quotaBytes: quotaBytes)
        return StorageScene(
            storage: storage, account: account, container: ContainerKey(account: account.id, container: container))
    }

    /// The same account's container `id`.
    func container(_ id: String) throws -> ContainerKey {
        ContainerKey(account: account.id, container: try ContainerID(id))
    }

    /// New content whose chunks the account has (as after uploading them).
    func uploadedContent(sizes: [Int64] = [10]) async throws -> Content {
        let content = Content.random(sizes: sizes)
        try await upload(content.chunks)
        return content
    }

    /// Records that the account has these chunks.
    func upload(_ chunks: [ChunkReference]) async throws {
        for chunk in chunks { _ = try await metadata.addChunk(chunk, to: account.id) }
    }

    /// A version of a file item `item` holding `content`, modified `seconds` after ``StorageFixtures/now``.
    func version(
        of item: ItemID, _ content: Content, at seconds: TimeInterval, basedOn: VersionID?,
        by device: SavingDevice = StorageFixtures.laptop, id: VersionID = VersionID()
    ) -> VersionRecord {
        VersionRecord(
            id: id, itemID: item, manifest: .file(content.chunks), contentHash: content.hash,
            modificationDate: StorageFixtures.date(seconds), savingDevice: device, basedOn: basedOn)
    }

    /// Creates an item at `path`, with `version` as its first version when given.
    @discardableResult
    func create(
        _ path: String, kind: ItemKind = .file, id: ItemID = ItemID(), version: VersionRecord? = nil,
        in container: ContainerKey? = nil
    ) async throws -> ItemResponse {
        try await metadata.createItem(
            CreateItemRequest(id: id, path: try ItemPath(path), kind: kind, version: version),
            in: container ?? self.container)
    }

    /// Creates a file item at `path` with a first version of new uploaded content; returns the response.
    @discardableResult
    func createFile(_ path: String, at seconds: TimeInterval = 0) async throws -> ItemResponse {
        let id = ItemID()
        let content = try await uploadedContent()
        return try await create(path, id: id, version: version(of: id, content, at: seconds, basedOn: nil))
    }

    /// The item as stored; fails the test when there is none.
    func detail(_ id: ItemID, sourceLocation: SourceLocation = #_sourceLocation) async throws -> ItemDetail {
        try #require(try await metadata.item(id, in: container), sourceLocation: sourceLocation)
    }

    /// Every change after `token` (from the start without one), following pages to the end, and the final token.
    func changes(since token: ChangeToken? = nil, in container: ContainerKey? = nil) async throws -> (
        changes: [Change], token: ChangeToken
    ) {
        var changes: [Change] = []
        var token = token
        while true {
            let page = try await metadata.changes(in: container ?? self.container, since: token, limit: 1000)
            changes += page.changes
            token = page.nextToken
            if !page.hasMore { return (changes, page.nextToken) }
        }
    }

    /// Everything the container holds and says.
    func snapshot(of container: ContainerKey? = nil) async throws -> ContainerSnapshot {
        let container = container ?? self.container
        let list = try await metadata.items(in: container)
        var details: [ItemDetail] = []
        for item in list.items {
            details.append(try #require(try await metadata.item(item.id, in: container)))
        }
        return ContainerSnapshot(list: list, details: details, changes: try await changes(in: container).changes)
    }

    /// The account as stored now.
    func storedAccount() async throws -> AccountRecord {
        try #require(try await metadata.account(id: account.id))
    }
}

/// Runs `body`, expecting it to throw a ``ProtocolError`` with `code`; returns the error (`nil` after recording
/// an issue when it did not).
@discardableResult
func expectError<T>(
    _ code: ProtocolError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> T
) async -> ProtocolError? {
    do {
        let result = try await body()
        Issue.record(
            "expected ProtocolError.\(code), got a result: \(result)\(comment.map { " — \($0)" } ?? "")",
            sourceLocation: sourceLocation)
    } catch let error as ProtocolError {
        #expect(error.code == code, comment, sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record(
            "expected ProtocolError.\(code), got \(error)\(comment.map { " — \($0)" } ?? "")",
            sourceLocation: sourceLocation)
    }
    return nil
}

/// A token naming the position `count` entries after `token`, in the same feed: past the end when `token` names
/// the end. Built from the token format the storage layer shares between drivers (`<feed>.<epoch>.<sequence>`).
func advanced(_ token: ChangeToken, by count: Int64) throws -> ChangeToken {
    var parts = token.string.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    let sequence = try #require(parts.last.flatMap { Int64($0) }, "\(token) does not end in a sequence number")
    parts[parts.count - 1] = String(sequence + count)
    return ChangeToken(parts.joined(separator: "."))
}

/// The bytes of the account's chunk with this hash, read in pieces of at most `pieceSize` (each checked), or `nil`
/// when the chunk store does not have it.
func readAll(
    _ hash: ChunkHash, of account: AccountID, from chunks: any ChunkStore, pieceSize: Int,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [UInt8]? {
    guard let reader = try await chunks.read(hash, of: account, pieceSize: pieceSize) else { return nil }
    var bytes: [UInt8] = []
    for try await piece in reader {
        #expect(
            (1...pieceSize).contains(piece.count), "a piece of \(piece.count) bytes", sourceLocation: sourceLocation)
        bytes += piece
    }
    #expect(Int64(bytes.count) == reader.size, "the reader's size is its length", sourceLocation: sourceLocation)
    return bytes
}
