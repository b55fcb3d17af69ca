import Foundation
import Logging
import SyncEngine
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// The setting of the sync engine benchmarks: the service in this process on 127.0.0.1 (port 0), and devices of
/// its one account, each with its own container root, running real engines.
struct SyncBench {
    let server: BenchServer
    /// Where the devices' container roots are: a short path in `TMPDIR` (`/tmp` when unset), since the engine's socket
    /// (`<root>/<container>/.ubiquity/…/engine.sock`) must fit a unix socket address (107 bytes).
    let roots: URL

    /// The engines' logger: errors only, so the figures stay readable (`UBIQUITY_BENCH_LOG=debug` for more).
    static let logger = {
        var logger = Logger(label: "ubiquity.bench.sync")
        logger.logLevel =
            ProcessInfo.processInfo.environment["UBIQUITY_BENCH_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .error
        return logger
    }()

    /// Starts the service with its data in `scratch/service`.
    static func start(in scratch: URL) async throws -> SyncBench {
        let temporary = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let roots = URL(fileURLWithPath: temporary, isDirectory: true).appendingPathComponent(
            "ubq-\(UUID().uuidString.prefix(8).lowercased())", isDirectory: true)
        try FileManager.default.createDirectory(at: roots, withIntermediateDirectories: true)
        return SyncBench(
            server: try await BenchServer.start(in: scratch.appendingPathComponent("service")), roots: roots)
    }

    /// Starts the service, runs `body` with it, and stops the service whatever happens.
    ///
    /// With `keepingRoots`, the devices' folders are left for the caller to remove (`body` is given their place in
    /// ``roots``): a benchmark that runs a peer on the same volume afterwards removes them after the peer's run, so
    /// that the peer does not start in the wake of tens of thousands of files just deleted (an ext4 without a journal
    /// searches past every inode freed in the last minute for each file it makes).
    static func run(
        in scratch: URL, keepingRoots: Bool = false, _ body: (SyncBench) async throws -> Void
    ) async throws {
        let bench = try await start(in: scratch)
        do {
            try await body(bench)
        } catch {
            try? await bench.stop(removingRoots: !keepingRoots)
            throw error
        }
        try await bench.stop(removingRoots: !keepingRoots)
    }

    /// Starts the engines of `devices`, runs `body`, and stops them whatever happens.
    static func withEngines(_ devices: [BenchDevice], _ body: () async throws -> Void) async throws {
        let engines = devices.map { $0.start() }
        do {
            try await body()
        } catch {
            for engine in engines { await engine.stop() }
            throw error
        }
        for engine in engines { await engine.stop() }
    }

    /// Signs a device named `name` in; its token and identity.
    func signIn(_ name: String) async throws -> (client: ServiceClient, device: SavingDevice) {
        let anonymous = ServiceClient(baseURL: server.base)
        let login = try await anonymous.login(
            LoginRequest(name: "bench", password: "benchmark!", deviceName: name))
        return (anonymous.signedIn(with: login.token), login.info.device)
    }

    /// Signs a device named `name` in and opens its container under `<roots>/<name>/`; the device talks to the
    /// service through 127.0.0.1:`port` when given (a ``ByteCountingProxy``).
    func device(_ name: String, eagerDownloadLimit: Int64 = 1 << 20, port: Int? = nil) async throws -> BenchDevice {
        var (client, device) = try await signIn(name)
        if let port, let token = client.token {
            client = ServiceClient(baseURL: "http://127.0.0.1:\(port)", token: token)
        }
        let layout = ContainerLayout(
            root: roots.appendingPathComponent(name, isDirectory: true), container: container)
        let sync = try ContainerSync(
            layout: layout, client: client, device: device,
            configuration: .init(eagerDownloadLimit: eagerDownloadLimit), logger: Self.logger)
        return BenchDevice(sync: sync, staging: roots.appendingPathComponent("\(name)-staging", isDirectory: true))
    }

    var container: ContainerID { server.container }

    /// A figure of the service's `/metrics`, such as `ubiquity_chunk_bytes_in_total` (0 when absent).
    func figure(_ name: String) -> Double {
        let line = server.service.metrics.exposition().split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    /// Versions, moves and deletions the service has committed so far.
    var commits: Double { figure("ubiquity_commits_total") }

    /// Stops the service and removes the devices' folders (unless `removingRoots` is false).
    func stop(removingRoots: Bool = true) async throws {
        defer { if removingRoots { try? FileManager.default.removeItem(at: roots) } }
        try await server.stop()
    }
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
        try writeFlushed(bytes, to: staged)
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

/// Writes `bytes` to a new file at `url` and flushes it.
func writeFlushed(_ bytes: Data, to url: URL) throws {
    guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
        throw BenchError("cannot create \(url.path)")
    }
    let handle = try FileHandle(forWritingTo: url)
    try handle.write(contentsOf: bytes)
    try handle.synchronize()
    try handle.close()
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

    /// Stops the engine and waits for it to end; an engine that had failed says why on standard error.
    func stop() async {
        task.cancel()
        if case .failure(let error) = await task.result, !(error is CancellationError) {
            FileHandle.standardError.write(Data("an engine had stopped: \(error)\n".utf8))
        }
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

/// When the service's commit count moved after a change landed: the first commit (with records sent first, the
/// item's record) and the last one seen (its content).
struct CommitWatch {
    let bench: SyncBench
    let landed: ContinuousClock.Instant
    private var seen: Double
    private(set) var first: Duration?
    private(set) var last: Duration?

    /// Starts watching; `commits` is the service's count before the change landed.
    init(_ bench: SyncBench, commits: Double, landed: ContinuousClock.Instant) {
        self.bench = bench
        self.landed = landed
        seen = commits
    }

    /// Looks at the count now.
    mutating func check() {
        let commits = bench.commits
        guard commits > seen else { return }
        seen = commits
        last = .now - landed
        if first == nil { first = last }
    }
}
