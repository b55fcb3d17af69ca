import Foundation
import Logging
import SyncEngine
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// The setting of the sync engine benchmarks: the service in this process on 127.0.0.1 (port 0), and devices of
/// its one account, each with its own container root under the scratch directory, running real engines.
struct SyncBench {
    let server: BenchServer
    let scratch: URL

    /// The engines' logger: errors only, so the figures stay readable.
    static let logger = {
        var logger = Logger(label: "ubiquity.bench.sync")
        logger.logLevel = .error
        return logger
    }()

    /// Starts the service with its data in `scratch/service`.
    static func start(in scratch: URL) async throws -> SyncBench {
        SyncBench(server: try await BenchServer.start(in: scratch.appendingPathComponent("service")), scratch: scratch)
    }

    /// Signs a device named `name` in; its token and identity.
    func signIn(_ name: String) async throws -> (client: ServiceClient, device: SavingDevice) {
        let anonymous = ServiceClient(baseURL: server.base)
        let login = try await anonymous.login(
            LoginRequest(name: "bench", password: "benchmark!", deviceName: name))
        return (anonymous.signedIn(with: login.token), login.info.device)
    }

    /// Signs a device named `name` in and opens its container under `scratch/<name>/`.
    func device(_ name: String, eagerDownloadLimit: Int64 = 1 << 20) async throws -> BenchDevice {
        let (client, device) = try await signIn(name)
        let layout = ContainerLayout(
            root: scratch.appendingPathComponent(name, isDirectory: true), container: container)
        let sync = try ContainerSync(
            layout: layout, client: client, device: device,
            configuration: .init(eagerDownloadLimit: eagerDownloadLimit), logger: Self.logger)
        return BenchDevice(sync: sync, staging: scratch.appendingPathComponent("\(name)-staging", isDirectory: true))
    }

    var container: ContainerID { server.container }

    /// A figure of the service's `/metrics`, such as `ubiquity_chunk_bytes_in_total` (0 when absent).
    func figure(_ name: String) -> Double {
        let line = server.service.metrics.exposition().split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    /// Versions, moves and deletions the service has committed so far.
    var commits: Double { figure("ubiquity_commits_total") }

    func stop() async throws { try await server.stop() }
}

/// One device of a sync benchmark: its container's sync, and a staging folder on the same volume where files are
/// written before they are renamed into the container, as apps save.
struct BenchDevice: Sendable {
    let sync: ContainerSync
    let staging: URL

    var documents: URL { sync.layout.documents }

    /// Starts the device's engine with push and no polling (only events bring changes); it runs until stopped.
    func start() -> RunningEngine {
        var engine = ContainerEngine(sync: sync, pushToken: sync.client.token, logger: SyncBench.logger)
        engine.pollInterval = .seconds(3600)
        // The engine runs until the benchmark stops it by cancelling this task.
        return RunningEngine(task: Task { try await engine.run() })
    }

    /// Writes `bytes` to a staging file, flushed, and renames it to `name` in `Documents/`: the file lands whole.
    /// - Returns: The instant of the rename.
    @discardableResult func land(_ bytes: Data, as name: String) throws -> ContinuousClock.Instant {
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        let staged = staging.appendingPathComponent(UUID().uuidString)
        guard FileManager.default.createFile(atPath: staged.path, contents: nil) else {
            throw BenchError("cannot create \(staged.path)")
        }
        let handle = try FileHandle(forWritingTo: staged)
        try handle.write(contentsOf: bytes)
        try handle.synchronize()
        try handle.close()
        return try rename(staged, to: name)
    }

    /// Writes `count` bytes of noise to a staging file in 4 MiB pieces (never the whole in memory), flushed, and
    /// renames it to `name` in `Documents/`.
    /// - Returns: The instant of the rename.
    @discardableResult func landNoise(count: Int, seed: UInt64, as name: String) throws -> ContinuousClock.Instant {
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        let staged = staging.appendingPathComponent(UUID().uuidString)
        try writeNoise(count: count, seed: seed, to: staged)
        return try rename(staged, to: name)
    }

    private func rename(_ staged: URL, to name: String) throws -> ContinuousClock.Instant {
        let target = documents.appendingPathComponent(name)
        guard Glibc.rename(staged.path, target.path) == 0 else { throw BenchError("rename to \(target.path) failed") }
        return .now
    }
}

/// Writes `count` bytes of noise to a new file at `url` in 4 MiB pieces and flushes it.
func writeNoise(count: Int, seed: UInt64, to url: URL) throws {
    guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
        throw BenchError("cannot create \(url.path)")
    }
    let handle = try FileHandle(forWritingTo: url)
    defer { try? handle.close() }
    var written = 0
    var piece: UInt64 = 0
    while written < count {
        let size = min(4 << 20, count - written)
        try handle.write(contentsOf: noiseBytes(count: size, seed: seed &* 1_000_003 &+ piece))
        written += size
        piece += 1
    }
    try handle.synchronize()
}

/// An engine running in this process.
struct RunningEngine: Sendable {
    let task: Task<Void, any Error>

    /// Stops the engine and waits for it to end.
    func stop() async {
        task.cancel()
        _ = await task.result
    }
}

extension Measure {
    /// The nearest-rank percentile `fraction` (0.5, 0.99) of `samples`.
    static func percentile(_ samples: [Duration], _ fraction: Double) -> Duration {
        let sorted = samples.sorted()
        precondition(!sorted.isEmpty, "no samples")
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    /// `duration` in milliseconds.
    static func milliseconds(_ duration: Duration) -> Double { microseconds(duration) / 1000 }

    /// Checks `condition` every `interval` until it holds; gives up after `limit`.
    static func poll(
        every interval: Duration = .milliseconds(1), for limit: Duration = .seconds(120),
        until condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + limit
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw BenchError("gave up waiting after \(limit)") }
            try await Task.sleep(for: interval)
        }
    }
}
