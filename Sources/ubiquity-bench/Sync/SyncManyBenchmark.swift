import Foundation
import SyncEngine
import UbiquityProtocol

/// `sync.many`: 10,000 files of 4 KiB in 100 folders, written beside A's container and moved into its `Documents/`
/// in one rename, until every file is in B's `Documents/` with the same bytes; both engines running (inotify up,
/// push down) against the service on loopback. Prints the files per second and the service's commits per file.
///
/// The target (issue 14) is at least 2,000 files a second, more than twice Syncthing's: when `syncthing` is installed,
/// two Syncthing devices on loopback carry the same tree in the same run (``SyncthingPair``), and the ratio is printed
/// (`UBIQUITY_BENCH_MANY_FILES` sets a smaller count).
enum SyncManyBenchmark {
    static let name = "sync.many"
    static let folders = 100
    static let fileSize = 4096

    static var files: Int {
        ProcessInfo.processInfo.environment["UBIQUITY_BENCH_MANY_FILES"].flatMap(Int.init) ?? 10_000
    }

    static func run(in scratch: URL) async throws {
        var ours: Double?
        // Our devices' files go after Syncthing's run, not before it (``SyncBench/run(in:keepingRoots:_:)``).
        var roots: URL?
        defer { if let roots { try? FileManager.default.removeItem(at: roots) } }
        try await SyncBench.run(in: scratch, keepingRoots: true) { bench in
            roots = bench.roots
            let deviceA = try await bench.device("A")
            let deviceB = try await bench.device("B")
            if ProcessInfo.processInfo.environment["UBIQUITY_BENCH_MANY_APART"] == "1" {
                try await apart(bench, from: deviceA, to: deviceB)
                return
            }
            try await SyncBench.withEngines([deviceA, deviceB]) {
                ours = try await many(bench, from: deviceA, to: deviceB)
            }
        }
        guard let ours else { return }
        try await syncthing(in: scratch.appendingPathComponent("syncthing", isDirectory: true), ours: ours)
    }

    /// The case's label.
    static var label: String {
        "\(files) files of 4KiB in \(folders) folders, moved into A's Documents to identical in B"
    }

    /// Writes the tree under `staged`, each file flushed, and returns each file's bytes by its path in the tree.
    static func writeTree(at staged: URL) throws -> [String: Data] {
        let count = files
        let perFolder = max(1, count / folders)
        var expected: [String: Data] = [:]
        for index in 0..<count {
            let folder = "Folder \(index / perFolder)"
            let name = "\(folder)/File \(index).txt"
            let bytes = noiseBytes(count: fileSize, seed: 7_000_000 + UInt64(index))
            let url = staged.appendingPathComponent(name)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try writeFlushed(bytes, to: url)
            expected[name] = bytes
        }
        return expected
    }

    /// Waits until every file of `expected` is in `arrival` (counted five times a second), then checks each.
    static func awaitArrival(of expected: [String: Data], in arrival: URL, each: () -> Void = {}) async throws {
        try await Measure.poll(every: .milliseconds(200), for: .seconds(1800)) {
            each()
            return Self.countFiles(in: arrival) >= expected.count
        }
    }

    /// Whether every file of `expected` is in `arrival` with its bytes.
    static func check(_ expected: [String: Data], in arrival: URL, by who: String) throws {
        for (name, bytes) in expected {
            guard (try? Data(contentsOf: arrival.appendingPathComponent(name))) == bytes else {
                throw BenchError("\(who): B's \(name) differs from A's")
            }
        }
    }

    /// The same tree carried by two Syncthing devices, and our time against theirs; ours alone when Syncthing is not
    /// installed.
    static func syncthing(in directory: URL, ours: Double) async throws {
        guard let pair = try await SyncthingPair.start(in: directory) else {
            print("sync.many: syncthing is not installed; no comparison with it")
            return
        }
        defer { pair.stop() }
        let staged = directory.appendingPathComponent("staging/Many", isDirectory: true)
        let expected = try writeTree(at: staged)
        let arrival = pair.folderB.appendingPathComponent("Many", isDirectory: true)
        let landed = ContinuousClock.now
        guard rename(staged.path, pair.folderA.appendingPathComponent("Many").path) == 0 else {
            throw BenchError("the tree could not be moved into Syncthing A's folder")
        }
        try await awaitArrival(of: expected, in: arrival)
        let seconds = Measure.microseconds(ContinuousClock.now - landed) / 1_000_000
        try check(expected, in: arrival, by: "Syncthing")
        BenchOutput.figure(bench: name, case: label, metric: "syncthing_seconds", value: seconds)
        BenchOutput.figure(
            bench: name, case: label, metric: "syncthing_files_per_s", value: Double(expected.count) / seconds)
        BenchOutput.figure(bench: name, case: label, metric: "speed_ratio_vs_syncthing", value: seconds / ours)
    }

    /// Carries the tree from `source` to `target` through the engines.
    /// - Returns: The seconds it took.
    static func many(_ bench: SyncBench, from source: BenchDevice, to target: BenchDevice) async throws -> Double {
        let count = files
        // The tree is written and flushed beside the container first, so that the rename is the only change A sees.
        let staged = source.staging.appendingPathComponent("Many", isDirectory: true)
        let expected = try writeTree(at: staged)
        let commitsBefore = bench.commits
        let requestsBefore = bench.figure("ubiquity_http_requests_total")
        let arrival = target.documents.appendingPathComponent("Many", isDirectory: true)
        let cpuBefore = Measure.processCPU()
        let landed = ContinuousClock.now
        guard rename(staged.path, source.documents.appendingPathComponent("Many").path) == 0 else {
            throw BenchError("the tree could not be moved into A's Documents/")
        }
        // Files land in B whole (renamed into place), so a count of them tells when all are there; then each is read.
        // Counted five times a second: listing the tree more often took a noticeable share of the two cores.
        // A has sent everything once the service has each file's creation with its first version (one change each)
        // and each folder's creation.
        let sent = Double(count + min(count, folders))
        var uploaded: Duration?
        try await awaitArrival(of: expected, in: arrival) {
            if uploaded == nil, bench.commits - commitsBefore >= sent { uploaded = ContinuousClock.now - landed }
        }
        let total = ContinuousClock.now - landed
        let cpuAfter = Measure.processCPU()
        try check(expected, in: arrival, by: "Ubiquity")
        let seconds = Measure.microseconds(total) / 1_000_000
        BenchOutput.figure(bench: name, case: label, metric: "seconds", value: seconds)
        BenchOutput.figure(bench: name, case: label, metric: "files_per_s", value: Double(count) / seconds)
        if let uploaded {
            // How the time splits: A's upload, then what B had left to fetch after it.
            BenchOutput.figure(
                bench: name, case: label, metric: "seconds_until_a_sent_all",
                value: Measure.microseconds(uploaded) / 1_000_000)
        }
        // Both engines and the service run in this process: its CPU is the whole cost of carrying the files.
        BenchOutput.figure(
            bench: name, case: label, metric: "cpu_user_ms_per_file",
            value: (cpuAfter.user - cpuBefore.user) / Double(count))
        BenchOutput.figure(
            bench: name, case: label, metric: "cpu_system_ms_per_file",
            value: (cpuAfter.system - cpuBefore.system) / Double(count))
        BenchOutput.figure(
            bench: name, case: label, metric: "service_commits_per_file",
            value: (bench.commits - commitsBefore) / Double(count))
        BenchOutput.figure(
            bench: name, case: label, metric: "service_requests_per_file",
            value: (bench.figure("ubiquity_http_requests_total") - requestsBefore) / Double(count))
        BenchOutput.figure(bench: name, case: label, metric: "target_files_per_s", value: 2000)
        return seconds
    }

    /// Where the time goes (`UBIQUITY_BENCH_MANY_APART=1`): A's engine alone until the service has every file, then
    /// B's alone (started afresh, catching up from the feed) until it has every file; the files per second and the
    /// process's CPU a file of each half. The two halves share the two cores when both engines run.
    static func apart(_ bench: SyncBench, from source: BenchDevice, to target: BenchDevice) async throws {
        let count = files
        let staged = source.staging.appendingPathComponent("Many", isDirectory: true)
        let expected = try writeTree(at: staged)
        let commitsBefore = bench.commits
        let sent = Double(count + min(count, folders))
        func figures(_ half: String, since start: ContinuousClock.Instant, cpu: (user: Double, system: Double)) {
            let seconds = Measure.microseconds(ContinuousClock.now - start) / 1_000_000
            let after = Measure.processCPU()
            BenchOutput.figure(
                bench: name, case: label, metric: "\(half)_alone_files_per_s", value: Double(count) / seconds)
            BenchOutput.figure(
                bench: name, case: label, metric: "\(half)_alone_cpu_ms_per_file",
                value: (after.user + after.system - cpu.user - cpu.system) / Double(count))
        }
        try await SyncBench.withEngines([source]) {
            let cpu = Measure.processCPU()
            let start = ContinuousClock.now
            guard rename(staged.path, source.documents.appendingPathComponent("Many").path) == 0 else {
                throw BenchError("the tree could not be moved into A's Documents/")
            }
            try await Measure.poll(every: .milliseconds(200), for: .seconds(1800)) {
                bench.commits - commitsBefore >= sent
            }
            figures("a", since: start, cpu: cpu)
        }
        let arrival = target.documents.appendingPathComponent("Many", isDirectory: true)
        try await SyncBench.withEngines([target]) {
            let cpu = Measure.processCPU()
            let start = ContinuousClock.now
            try await awaitArrival(of: expected, in: arrival)
            figures("b", since: start, cpu: cpu)
        }
        try check(expected, in: arrival, by: "Ubiquity")
    }

    /// How many files are in the folders of `folder`; hidden ones (a transfer's temporary file) are not counted.
    static func countFiles(in folder: URL) -> Int {
        let manager = FileManager.default
        guard let folders = try? manager.contentsOfDirectory(atPath: folder.path) else { return 0 }
        return folders.reduce(0) { sum, name in
            let names = (try? manager.contentsOfDirectory(atPath: folder.appendingPathComponent(name).path)) ?? []
            return sum + names.filter { !$0.hasPrefix(".") }.count
        }
    }
}
