import ArgumentParser
import Foundation
import SyncEngine

#if canImport(Glibc)
    import Glibc
#endif

/// Ubiquity's benchmarks. Run in release mode: `swift run -c release ubiquity-bench <name>`.
///
/// Each figure is printed as one JSON object on its own line (see ``BenchOutput``), measured against a baseline taken
/// in the same run, interleaved, wherever one exists.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ubiquity-bench",
        abstract: "Ubiquity's benchmarks; run in release mode.",
        discussion: "Prints one JSON object per figure and line. `list` names the benchmarks; `all` runs them all."
    )

    @Argument(help: "A benchmark name, `list` to print the names, or `all` to run every benchmark.")
    var name: String

    @Option(help: "Directory for the benchmarks' temporary files (default: the system temporary directory).")
    var directory: String?

    @Option(help: "sim: how many histories to run.")
    var histories: Int = 2_000

    @Option(help: "sim: the seed of the first history (the others follow it).")
    var seed: UInt64 = 1

    @Flag(help: "sim: print every history's trace.")
    var trace = false

    @Flag(
        help: """
            sim: remove local copies of deleted items without checking them again (the old engine's race); \
            sim.engine: check local copies against what the last scan saw.
            """)
    var uncheckedRemoval = false

    mutating func run() async throws {
        // A reader that stops early (`| head`) must not end the run by SIGPIPE before it stops what it started
        // (Syncthing's processes, an engine in a child process): printing to a closed pipe then fails quietly.
        signal(SIGPIPE, SIG_IGN)
        if name == "list" {
            for benchmark in Benchmark.all { print(benchmark.name) }
            return
        }
        // The engines and the service run in this process as `ubiquity sync` and `ubiquity server` run in theirs.
        AllocatorArenas.limitToCores()
        let selected = name == "all" ? Benchmark.all : Benchmark.all.filter { $0.name == name }
        guard !selected.isEmpty else {
            throw ValidationError("no benchmark named \(name.debugDescription); `list` prints the names")
        }
        if name == SimulationBenchmark.name {
            guard histories >= 1 else { throw ValidationError("--histories must be at least 1") }
            return try SimulationBenchmark.run(
                histories: histories, seed: seed, trace: trace, uncheckedRemoval: uncheckedRemoval)
        }
        if name == EngineSimulationBenchmark.name {
            guard histories >= 1 else { throw ValidationError("--histories must be at least 1") }
            return try EngineSimulationBenchmark.run(
                histories: histories, seed: seed, trace: trace, staleChecks: uncheckedRemoval)
        }
        let parent = directory.map { URL(fileURLWithPath: $0) } ?? FileManager.default.temporaryDirectory
        for benchmark in selected {
            try await benchmark.run(in: parent)
        }
    }
}

/// A named benchmark.
struct Benchmark: Sendable {
    /// The name given on the command line and printed in each figure's `bench` field.
    var name: String
    /// Runs the benchmark in `scratch`, a fresh directory removed afterwards, and prints its figures.
    var body: @MainActor @Sendable (_ scratch: URL) async throws -> Void

    static let all: [Benchmark] = [
        Benchmark(name: DocumentSaveBenchmark.name) { @MainActor in try await DocumentSaveBenchmark.run(in: $0) },
        Benchmark(name: PackageSaveBenchmark.name) { @MainActor in try await PackageSaveBenchmark.run(in: $0) },
        Benchmark(name: CoordinationBenchmark.name) { @MainActor in try CoordinationBenchmark.run(in: $0) },
        Benchmark(name: ServerCommitBenchmark.name) { try await ServerCommitBenchmark.run(in: $0) },
        Benchmark(name: ServerFeedBenchmark.name) { try await ServerFeedBenchmark.run(in: $0) },
        Benchmark(name: ServerPushBenchmark.name) { try await ServerPushBenchmark.run(in: $0) },
        Benchmark(name: ServerChunkBenchmark.name) { try await ServerChunkBenchmark.run(in: $0) },
        Benchmark(name: WireJSONBenchmark.name) { _ in try WireJSONBenchmark.run() },
        Benchmark(name: ChunkingBenchmark.name) { try ChunkingBenchmark.run(in: $0) },
        Benchmark(name: SyncLatencyBenchmark.name) { try await SyncLatencyBenchmark.run(in: $0) },
        Benchmark(name: SyncDeltaBenchmark.name) { try await SyncDeltaBenchmark.run(in: $0) },
        Benchmark(name: SyncInitialBenchmark.name) { try await SyncInitialBenchmark.run(in: $0) },
        Benchmark(name: SyncMemoryBenchmark.name) { try await SyncMemoryBenchmark.run(in: $0) },
        Benchmark(name: SyncManyBenchmark.name) { try await SyncManyBenchmark.run(in: $0) },
        Benchmark(name: QueryBenchmark.name) { try await QueryBenchmark.run(in: $0) },
        Benchmark(name: KeyValueBenchmark.name) { try await KeyValueBenchmark.run(in: $0) },
        Benchmark(name: PlannerBenchmark.name) { _ in PlannerBenchmark.run() },
        Benchmark(name: RecordInsertBenchmark.name) { try RecordInsertBenchmark.run(in: $0) },
        Benchmark(name: RecordSavesBenchmark.name) { try RecordSavesBenchmark.run(in: $0) },
        Benchmark(name: RecordFetchBenchmark.name) { try RecordFetchBenchmark.run(in: $0) },
        Benchmark(name: RecordImportBenchmark.name) { try await RecordImportBenchmark.run(in: $0) },
        Benchmark(name: RecordMemoryBenchmark.name) { try await RecordMemoryBenchmark.run(in: $0) },
        Benchmark(name: RecordLatencyBenchmark.name) { try await RecordLatencyBenchmark.run(in: $0) },
        Benchmark(name: SimulationBenchmark.name) { _ in
            try SimulationBenchmark.run(histories: 2_000, seed: 1, trace: false)
        },
        Benchmark(name: EngineSimulationBenchmark.name) { _ in
            try EngineSimulationBenchmark.run(histories: 500, seed: 1, trace: false)
        },
    ]

    /// Runs the benchmark in a scratch directory under `parent`, which is removed afterwards whatever happens.
    func run(in parent: URL) async throws {
        let scratch = parent.appendingPathComponent("ubiquity-bench-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        try await body(scratch)
    }
}
