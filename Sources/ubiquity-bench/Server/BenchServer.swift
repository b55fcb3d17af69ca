import AsyncHTTPClient
import Crypto
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import UbiquityProtocol
import UbiquityServer

/// A service running in this process on 127.0.0.1 (port 0) on the embedded default storage, and an HTTP client
/// signed in to it: the setting of every server benchmark.
struct BenchServer {
    let service: UbiquityService
    let port: Int
    let client: HTTPClient
    let token: String
    let device: SavingDevice
    let container = try! ContainerID("TEAM.com.example.bench")
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// Starts a service whose data lives in `directory` (its metadata in the PostgreSQL database `database` and its
    /// chunks in the S3 bucket `chunkStore` when given), registers an account unless `registering` is `false` (a
    /// node joining another's database, where the account exists already) and signs a device in.
    static func start(
        in directory: URL, connections: Int = 8, database: String? = nil, chunkStore: String? = nil,
        registering: Bool = true
    ) async throws -> BenchServer {
        var logger = Logger(label: "ubiquity.bench")
        logger.logLevel = .error
        let configuration = ServerConfiguration(
            dataDirectory: directory, port: 0, openRegistration: true, bcryptCost: 4, chunkStore: chunkStore,
            database: database)
        let service = try await UbiquityService(configuration: configuration, logger: logger)
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let application = try service.makeApplication { channel in
            portContinuation.yield(channel.localAddress?.port ?? 0)
        }
        // The service runs as `ubiquity server` runs it, in a service group the benchmark shuts down gracefully (a
        // cancelled server logs the cancellation as an error).
        let group = ServiceGroup(
            configuration: .init(services: [application], gracefulShutdownSignals: [], logger: logger))
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw BenchError("the service did not start") }
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: .init(
                connectionPool: .init(
                    idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)))
        let base = "http://127.0.0.1:\(port)"
        if registering {
            _ = try await Self.send(
                client, .POST, base + "/v1/accounts", json: RegisterRequest(name: "bench", password: "benchmark!"))
        }
        let login = try JSONDecoder().decode(
            LoginResponse.self,
            from: try await Self.send(
                client, .POST, base + "/v1/login",
                json: LoginRequest(name: "bench", password: "benchmark!", deviceName: "bench")))
        return BenchServer(
            service: service, port: port, client: client, token: login.token, device: login.info.device, group: group,
            task: task)
    }

    /// Stops the client and the service.
    func stop() async throws {
        try await client.shutdown()
        await group.triggerGracefulShutdown()
        _ = await task.result
    }

    /// Once stopped, removes the PostgreSQL schema the service kept its metadata in (one made for the run), so that
    /// a benchmark leaves nothing in the operator's database.
    func dropSchema() async throws {
        guard let store = service.store as? PostgresMetadataStore else { return }
        try await store.dropSchema()
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// The URL of a route of the benchmark's container.
    func url(_ rest: String) -> String { "\(base)/v1/containers/\(container)/\(rest)" }

    /// Sends a request with the device's token; returns the body of a successful answer.
    @discardableResult func send(_ method: HTTPMethod, _ url: String, body: ByteBuffer? = nil) async throws -> Data {
        try await Self.send(client, method, url, body: body, token: token)
    }

    @discardableResult func send(_ method: HTTPMethod, _ url: String, json: some Encodable) async throws -> Data {
        try await send(method, url, body: ByteBuffer(bytes: try JSONEncoder().encode(json)))
    }

    static func send(_ client: HTTPClient, _ method: HTTPMethod, _ url: String, json: some Encodable) async throws
        -> Data
    {
        try await send(client, method, url, body: ByteBuffer(bytes: try JSONEncoder().encode(json)), token: nil)
    }

    static func send(
        _ client: HTTPClient, _ method: HTTPMethod, _ url: String, body: ByteBuffer?, token: String?
    ) async throws -> Data {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body { request.body = .bytes(body) }
        let response = try await client.execute(request, timeout: .seconds(120))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        guard (200..<300).contains(response.status.code) else {
            throw BenchError("\(method) \(url): \(response.status) \(String(buffer: bytes))")
        }
        return Data(bytes.readableBytesView)
    }

    /// Uploads one chunk; returns its reference.
    func upload(_ bytes: ByteBuffer) async throws -> ChunkReference {
        let hash = try ChunkHash(digest: SHA256.hash(data: bytes.readableBytesView))
        try await send(.PUT, url("chunks/\(hash)"), body: bytes)
        return ChunkReference(hash: hash, size: Int64(bytes.readableBytes))
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The process's resident memory.
enum Memory {
    /// The current resident set size, in bytes (from `/proc/self/status`).
    static var residentBytes: Int { field("VmRSS:") }

    private static func field(_ name: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) })
        else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
}
