import Foundation
import Logging
import ServiceLifecycle
import SyncEngine
import UbiquityProtocol
import UbiquityServer

/// A sync service running in the test process on 127.0.0.1, on the embedded default storage in a temporary
/// directory: the real thing the engine talks to.
public struct LocalService: Sendable {
    public let directory: URL
    public let port: Int
    public let service: UbiquityService
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts a service on `port` (0: any free one) with its data in `directory` (a new temporary one by default).
    public static func start(in directory: URL? = nil, port: Int = 0, quota: Int64? = nil) async throws -> LocalService
    {
        let directory =
            directory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent(
                "ubiquity-engine-test-\(UUID().uuidString.prefix(8))", isDirectory: true)
        var logger = Logger(label: "ubiquity.engine.test.service")
        logger.logLevel = .critical
        let configuration = ServerConfiguration(
            dataDirectory: directory, port: port, openRegistration: true, defaultQuotaBytes: quota, bcryptCost: 4,
            heartbeatInterval: .milliseconds(200))
        let service = try await UbiquityService(configuration: configuration, logger: logger)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = try service.makeApplication { continuation.yield($0.localAddress?.port ?? 0) }
        // Run as `ubiquity server` runs it, in a service group that `stop()` shuts down gracefully, as SIGTERM does.
        let group = ServiceGroup(
            configuration: .init(services: [application], gracefulShutdownSignals: [], logger: logger))
        // The stream ends when the group does, so a service that cannot bind (a fixed port taken meanwhile) fails
        // the start with its error instead of leaving it waiting for a port that never comes.
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else {
            if case .failure(let error) = await task.result { throw error }
            throw ProtocolError(.internalError, "the service stopped before it started")
        }
        return LocalService(directory: directory, port: bound, service: service, group: group, task: task)
    }

    /// Stops the service gracefully (its data stays): requests under way are answered, connections closed.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = await task.result
    }

    /// Stops the service and removes its data.
    public func remove() async {
        await stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Registers `account` (when new) and signs a device named `device` in.
    public func signIn(account: String, device: String, password: String = "correct horse") async throws
        -> ServiceClient
    {
        let anonymous = ServiceClient(baseURL: baseURL)
        _ = try? await anonymous.register(name: account, password: password)
        let login = try await anonymous.login(LoginRequest(name: account, password: password, deviceName: device))
        return anonymous.signedIn(with: login.token)
    }

    /// One of the service's figures (`/metrics`) by its full name: `ubiquity_chunks_in_total`; 0 when absent.
    public func figure(_ name: String) -> Int {
        let line = service.metrics.exposition().split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    /// Spoils what the service stores of account `name`'s chunk `hash`, as a damaged disk would (a chunk file moved
    /// away, a packed chunk's bytes inverted in its pack).
    /// - Returns: What puts the chunk back as it was.
    public func spoilChunk(_ hash: ChunkHash, ofAccount name: String) async throws -> @Sendable () throws -> Void {
        guard let account = try await service.store.account(named: name)?.id,
            let chunks = service.chunks as? FileChunkStore
        else { throw ProtocolError(.chunkNotFound, "no account \(name) on a file chunk store") }
        let file = chunks.location(of: hash, of: account)
        if FileManager.default.fileExists(atPath: file.path) {
            let aside = file.appendingPathExtension("spoiled")
            try FileManager.default.moveItem(at: file, to: aside)
            return { try FileManager.default.moveItem(at: aside, to: file) }
        }
        guard let packed = try chunks.packedLocation(of: hash, of: account) else {
            throw ProtocolError(.chunkNotFound, "the service has no chunk \(hash)")
        }
        @Sendable func invert() throws {
            let handle = try FileHandle(forUpdating: packed.pack)
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(packed.offset))
            let bytes = try handle.read(upToCount: Int(packed.length)) ?? Data()
            try handle.seek(toOffset: UInt64(packed.offset))
            try handle.write(contentsOf: Data(bytes.map { ~$0 }))
        }
        try invert()
        return invert
    }
}
