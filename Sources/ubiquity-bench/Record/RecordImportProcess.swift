import Foundation
import RecordStore
import Synchronization

/// The importing device of `record.import` and `record.memory`, in a process of its own: this executable run again
/// as `ubiquity-bench record.import` with ``environmentKey`` set.
///
/// Its own process, so that its resident memory is its import's alone; and its store is added once the other
/// device's logs are all in the content folder, since adding a store imports what is there first
/// (`importUbiquitousContent()`, on the calling thread, before the store starts watching the folder). A store added
/// earlier would import each log as the file system reports it, on the coordinator's queue, beside any import asked
/// for by hand.
///
/// The child prints one ``Report`` as a JSON line about once a second while it imports (the peak so far) and one
/// when done; the parent reads them from its standard output.
struct RecordImportProcess {
    /// Where the child's store and content folder are.
    struct Specification: Codable, Sendable {
        /// B's store: added, and so importing, in the child.
        var store: String
        /// The content folder holding the other device's logs.
        var content: String
        /// An empty store and content folder, added first: what opening a store costs apart from the import.
        var emptyStore: String
        var emptyContent: String
    }

    /// What the child reports.
    struct Report: Codable, Sendable {
        enum Kind: String, Codable, Sendable {
            case sample, result
        }
        var kind: Kind
        /// Seconds since the store began to be added.
        var elapsedSeconds: Double
        /// The largest resident set sampled since then, MiB.
        var peakMiB: Double
        /// The resident set just before, MiB.
        var beforeMiB: Double
        /// The result's figures: the resident set at the child's start, the time to add the empty store, the
        /// resident set after the import, the kernel's high-water mark (`VmHWM`) before and after it, and the
        /// readings B's store holds.
        var startMiB: Double?
        var openSeconds: Double?
        var afterMiB: Double?
        var highWaterBeforeMiB: Double?
        var highWaterAfterMiB: Double?
        var readings: Int?
    }

    /// What a run of the child gave: its result, or the last sample before the time limit stopped it.
    struct Outcome {
        var result: Report?
        var lastSample: Report?
    }

    static let environmentKey = "UBIQUITY_BENCH_RECORD_IMPORT"

    /// The specification given to this process, when it is such a child.
    static var specification: Specification? {
        guard let json = ProcessInfo.processInfo.environment[environmentKey] else { return nil }
        return try? JSONDecoder().decode(Specification.self, from: Data(json.utf8))
    }

    // MARK: - The parent

    /// Runs a child importing into `specification`'s store, stopped after `limit`.
    @MainActor
    static func run(_ specification: Specification, limit: Duration) async throws -> Outcome {
        let process = Process()
        process.executableURL = URL(
            fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        process.arguments = [RecordImportBenchmark.name]
        var environment = ProcessInfo.processInfo.environment
        environment[environmentKey] = String(decoding: try JSONEncoder().encode(specification), as: UTF8.self)
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        let reports = ReportLines(output.fileHandleForReading)
        try process.run()
        let deadline = ContinuousClock.now + limit
        while process.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let stopped = process.isRunning
        if stopped { process.terminate() }
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        let all = await reports.all()
        guard stopped || process.terminationStatus == 0 else {
            throw BenchError("the importing process exited with \(process.terminationStatus)")
        }
        return Outcome(
            result: all.last { $0.kind == .result }, lastSample: all.last { $0.kind == .sample })
    }

    /// Reads a child's reports, one JSON line each, on a thread of its own until the child closes its output.
    private final class ReportLines: Sendable {
        private let reports = Mutex<(lines: [Report], ended: Bool)>(([], false))

        init(_ handle: FileHandle) {
            // A thread of its own: reading the pipe blocks.
            Thread.detachNewThread { [self] in
                var buffer = Data()
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    buffer.append(chunk)
                    while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = Data(buffer[buffer.startIndex..<newline])
                        buffer.removeSubrange(buffer.startIndex...newline)
                        if let report = try? JSONDecoder().decode(Report.self, from: line) {
                            reports.withLock { $0.lines.append(report) }
                        }
                    }
                }
                reports.withLock { $0.ended = true }
            }
        }

        /// Every report, once the child's output has ended.
        func all() async -> [Report] {
            while true {
                let (lines, ended) = reports.withLock { ($0.lines, $0.ended) }
                if ended { return lines }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    // MARK: - The child

    /// In the child: adds an empty store, then B's store (importing the content folder's logs), sampling resident
    /// memory meanwhile, and reports.
    static func serve(_ specification: Specification) throws {
        let startMiB = ResidentMemory.mebibytes(ResidentMemory.bytes)
        let clock = ContinuousClock()
        let open = try clock.measure {
            _ = try RecordBench.coordinator(
                store: URL(fileURLWithPath: specification.emptyStore),
                content: URL(fileURLWithPath: specification.emptyContent, isDirectory: true))
        }
        let before = ResidentMemory.bytes
        let highWaterBefore = ProcessMemory.current.peak
        let beforeMiB = ResidentMemory.mebibytes(before)
        let sampler = MemorySampler(every: .milliseconds(10)) { peak, elapsed in
            write(
                Report(
                    kind: .sample, elapsedSeconds: Measure.seconds(elapsed), peakMiB: ResidentMemory.mebibytes(peak),
                    beforeMiB: beforeMiB))
        }
        sampler.start()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: RecordBenchModel.model)
        let start = clock.now
        try coordinator.addPersistentStore(
            type: .sqlite, configuration: nil, at: URL(fileURLWithPath: specification.store),
            options: RecordBench.options(content: URL(fileURLWithPath: specification.content, isDirectory: true)))
        let elapsed = clock.now - start
        let peak = sampler.stop()
        let after = ResidentMemory.bytes
        let highWaterAfter = ProcessMemory.current.peak
        let readings = try RecordBench.context(coordinator).count(for: FetchRequest<BenchReading>())
        write(
            Report(
                kind: .result, elapsedSeconds: Measure.seconds(elapsed), peakMiB: ResidentMemory.mebibytes(peak),
                beforeMiB: beforeMiB, startMiB: startMiB, openSeconds: Measure.seconds(open),
                afterMiB: ResidentMemory.mebibytes(after), highWaterBeforeMiB: highWaterBefore,
                highWaterAfterMiB: highWaterAfter, readings: readings))
    }

    private static func write(_ report: Report) {
        guard let json = try? JSONEncoder().encode(report) else { return }
        FileHandle.standardOutput.write(json + Data("\n".utf8))
    }
}
