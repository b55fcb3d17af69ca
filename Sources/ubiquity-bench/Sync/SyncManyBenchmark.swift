import Foundation
import SyncEngine
import UbiquityProtocol

/// `sync.many`: 10,000 files of 4 KiB in 100 folders, written beside A's container and moved into its `Documents/`
/// in one rename, until every file is in B's `Documents/` with the same bytes; both engines running (inotify up,
/// push down) against the service on loopback. Prints the files per second and the service's commits per file.
///
/// The target (issue 14) is at least 2,000 files a second, more than twice Syncthing's 901 on this machine; Syncthing
/// is not run here yet, so the figure is printed alone (`UBIQUITY_BENCH_MANY_FILES` sets a smaller count).
enum SyncManyBenchmark {
    static let name = "sync.many"
    static let folders = 100
    static let fileSize = 4096

    static var files: Int {
        ProcessInfo.processInfo.environment["UBIQUITY_BENCH_MANY_FILES"].flatMap(Int.init) ?? 10_000
    }

    static func run(in scratch: URL) async throws {
        try await SyncBench.run(in: scratch) { bench in
            let deviceA = try await bench.device("A")
            let deviceB = try await bench.device("B")
            try await SyncBench.withEngines([deviceA, deviceB]) {
                try await many(bench, from: deviceA, to: deviceB)
            }
        }
    }

    static func many(_ bench: SyncBench, from source: BenchDevice, to target: BenchDevice) async throws {
        let count = files
        let perFolder = max(1, count / folders)
        // The tree is written and flushed beside the container first, so that the rename is the only change A sees.
        let staged = source.staging.appendingPathComponent("Many", isDirectory: true)
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
        let commitsBefore = bench.commits
        let requestsBefore = bench.figure("ubiquity_http_requests_total")
        let arrival = target.documents.appendingPathComponent("Many", isDirectory: true)
        let landed = ContinuousClock.now
        guard rename(staged.path, source.documents.appendingPathComponent("Many").path) == 0 else {
            throw BenchError("the tree could not be moved into A's Documents/")
        }
        // Files land in B whole (renamed into place), so a count of them tells when all are there; then each is read.
        // Counted five times a second: listing the tree more often took a noticeable share of the two cores.
        // A has sent everything once the service has each file's creation and first version, and each folder's
        // creation.
        let sent = Double(2 * count + min(count, folders))
        var uploaded: Duration?
        try await Measure.poll(every: .milliseconds(200), for: .seconds(1800)) {
            if uploaded == nil, bench.commits - commitsBefore >= sent { uploaded = ContinuousClock.now - landed }
            return Self.countFiles(in: arrival) >= count
        }
        let total = ContinuousClock.now - landed
        for (name, bytes) in expected {
            guard (try? Data(contentsOf: arrival.appendingPathComponent(name))) == bytes else {
                throw BenchError("B's \(name) differs from A's")
            }
        }
        let seconds = Measure.microseconds(total) / 1_000_000
        let label = "\(count) files of 4KiB in \(folders) folders, moved into A's Documents to identical in B"
        BenchOutput.figure(bench: name, case: label, metric: "seconds", value: seconds)
        BenchOutput.figure(bench: name, case: label, metric: "files_per_s", value: Double(count) / seconds)
        if let uploaded {
            // How the time splits: A's upload, then what B had left to fetch after it.
            BenchOutput.figure(
                bench: name, case: label, metric: "seconds_until_a_sent_all",
                value: Measure.microseconds(uploaded) / 1_000_000)
        }
        BenchOutput.figure(
            bench: name, case: label, metric: "service_commits_per_file",
            value: (bench.commits - commitsBefore) / Double(count))
        BenchOutput.figure(
            bench: name, case: label, metric: "service_requests_per_file",
            value: (bench.figure("ubiquity_http_requests_total") - requestsBefore) / Double(count))
        BenchOutput.figure(bench: name, case: label, metric: "target_files_per_s", value: 2000)
    }

    /// How many files are in the folders of `folder`.
    static func countFiles(in folder: URL) -> Int {
        let manager = FileManager.default
        guard let folders = try? manager.contentsOfDirectory(atPath: folder.path) else { return 0 }
        return folders.reduce(0) { sum, name in
            sum + ((try? manager.contentsOfDirectory(atPath: folder.appendingPathComponent(name).path))?.count ?? 0)
        }
    }
}
