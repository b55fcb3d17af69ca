import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
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

    /// How a test reaches the service.
    enum Transport: Sendable {
        /// In process, through the router.
        case router
        /// Over loopback, to the service listening on a port of its own.
        case live
    }

    /// Runs `body` with a client of the service, in process (`.router`) or over loopback (`.live`), then removes
    /// the data directory (and the PostgreSQL schema, on that storage) unless `keep` is set.
    ///
    /// The loopback client sets no deadline of its own: a test asserts what the service answers, not how soon, and
    /// on a slow, loaded machine a request may wait long (the test run's own limit catches a service that hangs).
    func test<Value: Sendable>(
        _ transport: Transport = .router, keep: Bool = false,
        _ body: @escaping @Sendable (any ServiceTestClient) async throws -> Value
    ) async throws -> Value {
        defer { if !keep { try? FileManager.default.removeItem(at: directory) } }
        let result: Result<Value, any Error>
        do {
            switch transport {
            case .router:
                result = .success(
                    try await service.makeApplication().test(.router) { client in
                        try await body(RouterClient(client: client))
                    })
            case .live:
                result = .success(try await live(body))
            }
        } catch {
            result = .failure(error)
        }
        if !keep { try? await (service.store as? PostgresMetadataStore)?.dropSchema() }
        return try result.get()
    }

    /// Runs `body` with a client of the service listening on a free port of 127.0.0.1, and stops the service after.
    private func live<Value: Sendable>(
        _ body: @escaping @Sendable (any ServiceTestClient) async throws -> Value
    ) async throws -> Value {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = try service.makeApplication { continuation.yield($0.localAddress?.port ?? 0) }
        let running = Task {
            defer { continuation.finish() }  // a service that cannot start ends the wait for its port
            try await application.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            _ = try await running.value
            throw ProtocolError(.internalError, "the service stopped before it listened")
        }
        let outcome: Result<Value, any Error>
        do {
            outcome = .success(try await body(LoopbackClient(port: port)))
        } catch {
            outcome = .failure(error)
        }
        running.cancel()
        _ = await running.result
        return try outcome.get()
    }
}

/// An answer as the tests read it: the status, the headers and the whole body.
struct TestAnswer: Sendable {
    let status: HTTPResponse.Status
    let headers: HTTPFields
    let body: ByteBuffer
}

/// A client of the service under test (``TestServer/test(_:keep:_:)``).
protocol ServiceTestClient: Sendable {
    /// Sends a request and reads the whole answer.
    func executeRequest(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?)
        async throws -> TestAnswer
    /// The port the service listens on, over loopback; `nil` in process.
    var port: Int? { get }
}

/// The service in process, through its router.
private struct RouterClient: ServiceTestClient {
    let client: any TestClientProtocol

    func executeRequest(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?)
        async throws -> TestAnswer
    {
        let response = try await client.executeRequest(uri: uri, method: method, headers: headers, body: body)
        return TestAnswer(status: response.status, headers: response.headers, body: response.body)
    }

    var port: Int? { nil }
}

/// The service over loopback, through AsyncHTTPClient, with no deadline; redirects are answers, not followed.
private struct LoopbackClient: ServiceTestClient {
    let port: Int?

    /// One client for the whole run, as `HTTPClient.shared` is, but not following redirects.
    private static let http = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))

    func executeRequest(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?)
        async throws -> TestAnswer
    {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port ?? 0)\(uri)")
        request.method = HTTPMethod(rawValue: method.rawValue)
        request.headers = HTTPHeaders(headers.map { ($0.name.rawName, $0.value) })
        if let body { request.body = .bytes(body) }
        let response = try await Self.http.execute(request, deadline: .distantFuture)
        var fields = HTTPFields()
        for (name, value) in response.headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        return TestAnswer(
            status: HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase),
            headers: fields, body: try await response.body.collect(upTo: .max))
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
    let client: any ServiceTestClient
    let token: String
    let info: TokenInfo
    let container: ContainerID

    static let defaultContainer = try! ContainerID("TEAM.com.example.grocery")

    /// Registers `account` (when new) and signs a device named `name` in.
    static func signIn(
        _ client: any ServiceTestClient, account: String, device name: String, password: String = "correct horse",
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
        _ client: any ServiceTestClient, _ method: HTTPRequest.Method, _ uri: String, json value: some Encodable
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
