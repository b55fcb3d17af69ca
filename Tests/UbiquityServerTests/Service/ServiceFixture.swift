import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import UbiquityProtocol
import UbiquityServer

/// Where a test's service keeps its metadata. Its chunks are in the data directory's `chunks/` either way.
enum ServiceStorage: String, CaseIterable, Codable, Sendable, CustomTestStringConvertible {
    /// `ubiquity.sqlite` in the data directory: the embedded default.
    case embedded
    /// The database of `UBIQUITY_POSTGRES_URL`, in a schema of the service's own, named after its data directory.
    case postgres

    var testDescription: String {
        switch self {
        case .embedded: "embedded SQLite"
        case .postgres: "PostgreSQL"
        }
    }

    /// The storages the service suites run on: the embedded default, and PostgreSQL when `UBIQUITY_POSTGRES_URL`
    /// names a server (`.ci/run` starts one) and always in CI, where a missing server fails its tests instead of
    /// leaving them out.
    static var available: [ServiceStorage] {
        StorageFixtures.postgresURL != nil || StorageFixtures.isCI ? [.embedded, .postgres] : [.embedded]
    }
}

/// A service in a fresh temporary data directory, on the embedded default storage unless told otherwise.
struct TestServer {
    let directory: URL
    let service: UbiquityService

    /// A new service (open registration, cheap bcrypt) in a new directory, or on `directory` to reopen one.
    /// - Parameter storage: Where the metadata is kept; with ``ServiceStorage/postgres`` reopening `directory`
    ///   reopens the same schema.
    static func make(
        in directory: URL? = nil, storage: ServiceStorage = .embedded,
        _ configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        let directory =
            directory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent(
                "ubiquity-server-test-\(UUID().uuidString.prefix(8))", isDirectory: true)
        var configuration = ServerConfiguration(
            dataDirectory: directory, port: 0, openRegistration: true, bcryptCost: 4,
            heartbeatInterval: .milliseconds(200))
        if storage == .postgres {
            configuration.database = try StorageFixtures.postgresDatabase(schema: directory.path)
        }
        configure(&configuration)
        var logger = Logger(label: "ubiquity.server.test")
        logger.logLevel = .critical
        let service = try await UbiquityService(configuration: configuration, logger: logger)
        return TestServer(directory: directory, service: service)
    }

    /// Runs `body` with a client of the service, in process (`.router`) or over loopback (`.live`), then removes
    /// the data directory (and the PostgreSQL schema, on that storage) unless `keep` is set.
    func test<Value: Sendable>(
        _ framework: TestingSetup = .router, keep: Bool = false,
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Value
    ) async throws -> Value {
        defer { if !keep { try? FileManager.default.removeItem(at: directory) } }
        let result: Result<Value, any Error>
        do {
            result = .success(try await service.makeApplication().test(framework) { client in try await body(client) })
        } catch {
            result = .failure(error)
        }
        if !keep { try? await (service.store as? PostgresMetadataStore)?.dropSchema() }
        return try result.get()
    }
}

/// An answer of the service: its status and body.
struct Answer {
    let status: HTTPResponse.Status
    let body: Data

    /// The body decoded as `T`, which a 2xx answer must be.
    func decode<T: Decodable>(_ type: T.Type, sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
        #expect(
            (200..<300).contains(status.code), "expected success, got \(status): \(text)",
            sourceLocation: sourceLocation)
        return try JSONDecoder().decode(type, from: body)
    }

    /// The error body of a refusal.
    var error: ProtocolError? { try? JSONDecoder().decode(ProtocolError.self, from: body) }

    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A device signed in to the service: it sends requests with its bearer token.
struct Device: Sendable {
    let client: any TestClientProtocol
    let token: String
    let info: TokenInfo
    let container: ContainerID

    static let defaultContainer = try! ContainerID("TEAM.com.example.grocery")

    /// Registers `account` (when new) and signs a device named `name` in.
    static func signIn(
        _ client: any TestClientProtocol, account: String, device name: String, password: String = "correct horse",
        container: ContainerID = Device.defaultContainer, containers: [ContainerID]? = nil
    ) async throws -> Device {
        _ = try await send(client, .post, "/v1/accounts", json: RegisterRequest(name: account, password: password))
        let answer = try await send(
            client, .post, "/v1/login",
            json: LoginRequest(name: account, password: password, deviceName: name, containers: containers))
        let login = try answer.decode(LoginResponse.self)
        return Device(client: client, token: login.token, info: login.info, container: container)
    }

    /// The path of a route of this device's container: `containerPath("items")`.
    func path(_ rest: String) -> String { "/v1/containers/\(container)/\(rest)" }

    func send(
        _ method: HTTPRequest.Method, _ uri: String, body: ByteBuffer? = nil, token: String? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> Answer {
        var headers = extra
        headers[.authorization] = "Bearer \(token ?? self.token)"
        let response = try await client.executeRequest(uri: uri, method: method, headers: headers, body: body)
        return Answer(status: response.status, body: Data(response.body.readableBytesView))
    }

    func send(_ method: HTTPRequest.Method, _ uri: String, json value: some Encodable) async throws -> Answer {
        try await send(method, uri, body: ByteBuffer(bytes: try JSONEncoder().encode(value)))
    }

    static func send(
        _ client: any TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, json value: some Encodable
    ) async throws -> Answer {
        let response = try await client.executeRequest(
            uri: uri, method: method, headers: [:], body: ByteBuffer(bytes: try JSONEncoder().encode(value)))
        return Answer(status: response.status, body: Data(response.body.readableBytesView))
    }

    /// Uploads `content` in chunks of `chunkSize` bytes (only those the service lacks) and returns the version to
    /// commit.
    func prepareVersion(
        of item: ItemID, _ content: [UInt8], basedOn: VersionID? = nil, modified: Date = Date(),
        chunkSize: Int = 4096
    ) async throws -> VersionRecord {
        let pieces = stride(from: 0, to: content.count, by: chunkSize).map {
            Array(content[$0..<min($0 + chunkSize, content.count)])
        }
        let references = try pieces.map { ChunkReference(hash: try Self.hash($0), size: Int64($0.count)) }
        let missing = try await send(.post, path("chunks/missing"), json: MissingChunksRequest(chunks: references))
            .decode(MissingChunksResponse.self).missing
        for (piece, reference) in zip(pieces, references) where missing.contains(reference.hash) {
            let answer = try await send(.put, path("chunks/\(reference.hash)"), body: ByteBuffer(bytes: piece))
            #expect(answer.status == .created || answer.status == .ok, "chunk upload: \(answer.text)")
        }
        return VersionRecord(
            id: VersionID(), itemID: item, manifest: .file(references), contentHash: try Self.hash(content),
            modificationDate: modified, savingDevice: info.device, basedOn: basedOn)
    }

    /// Creates an item at `path` with `content` as its first version.
    func create(_ path: String, _ content: [UInt8], modified: Date = Date()) async throws -> ItemResponse {
        let id = ItemID()
        let version = try await prepareVersion(of: id, content, modified: modified)
        return try await send(
            .post, self.path("items"),
            json: CreateItemRequest(id: id, path: try ItemPath(path), kind: .file, version: version)
        ).decode(ItemResponse.self)
    }

    /// Commits `content` as a new version of `item` based on `basedOn`.
    func commit(_ item: ItemID, _ content: [UInt8], basedOn: VersionID?, modified: Date = Date()) async throws
        -> ItemResponse
    {
        let version = try await prepareVersion(of: item, content, basedOn: basedOn, modified: modified)
        return try await send(.post, path("items/\(item)/versions"), json: version).decode(ItemResponse.self)
    }

    /// Every change of the container's feed, paging with `limit`.
    func allChanges(limit: Int = 1000) async throws -> [Change] {
        var changes: [Change] = []
        var since: ChangeToken?
        while true {
            let query = "changes?limit=\(limit)" + (since.map { "&since=\($0)" } ?? "")
            let page = try await send(.get, path(query)).decode(ChangePage.self)
            changes += page.changes
            since = page.nextToken
            if !page.hasMore { return changes }
        }
    }

    /// The content of `version`, downloaded chunk by chunk.
    func download(_ version: VersionRecord) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        for chunk in version.manifest.chunks {
            let answer = try await send(.get, path("chunks/\(chunk.hash)"))
            #expect(answer.status == .ok)
            bytes += answer.body
        }
        return bytes
    }

    static func hash(_ bytes: some Sequence<UInt8>) throws -> ChunkHash {
        try ChunkHash(digest: SHA256.hash(data: Array(bytes)))
    }
}

extension String {
    var bytes: [UInt8] { Array(utf8) }
}
