import Foundation
import SyncEngine
import UbiquityProtocol

/// `sync.latency`: two devices' engines running (inotify up, push down) against the service on loopback.
///
/// - From a 4 KiB file landing in A's `Documents/` (written and flushed beside the container, then renamed in, as
///   apps save) to the same bytes in B's, polled every millisecond: p50, p90, p99 over 100 runs, split at the
///   instants the service counted A's first commit (the item's record) and last (its content): A's part is
///   debounce, scan, read, upload and commits; B's part push, feed, item, download and placing.
/// - Time to the first placeholder: from a 4 MiB file landing in A's folder (above B's 1 MiB eager-download limit, so
///   B keeps a placeholder) to B's engine knowing the item.
enum SyncLatencyBenchmark {
    static let name = "sync.latency"
    static let warmup = 5
    static let runs = 100
    static let placeholderRuns = 30
    static let placeholderSize = 4 << 20
    /// The pause after each run, so both engines finish the rounds the change caused (B's own write, A's push).
    static let settle = Duration.milliseconds(100)

    static func run(in scratch: URL) async throws {
        try await SyncBench.run(in: scratch) { bench in
            let deviceA = try await bench.device("A")
            let deviceB = try await bench.device("B")
            try await SyncBench.withEngines([deviceA, deviceB]) {
                try await smallFiles(bench, from: deviceA, to: deviceB)
                try await placeholders(bench, from: deviceA, to: deviceB)
            }
        }
    }

    static func smallFiles(_ bench: SyncBench, from source: BenchDevice, to target: BenchDevice) async throws {
        var totals: [Duration] = []
        var records: [Duration] = []
        var uploads: [Duration] = []
        var downloads: [Duration] = []
        for run in 0..<(warmup + runs) {
            let name = "Note \(run).txt"
            let bytes = noiseBytes(count: 4096, seed: 4096 + UInt64(run))
            let arrival = target.documents.appendingPathComponent(name)
            let commitsBefore = bench.commits
            let landed = try source.land(bytes, as: name)
            var commits = CommitWatch(bench, commits: commitsBefore, landed: landed)
            try await Measure.poll {
                commits.check()
                return (try? Data(contentsOf: arrival)) == bytes
            }
            let total = ContinuousClock.now - landed
            if run >= warmup {
                records.append(commits.first ?? total)
                uploads.append(commits.last ?? total)
                totals.append(total)
                downloads.append(total - (commits.last ?? total))
            }
            try await Task.sleep(for: settle)
        }
        let label = "4KiB new file, A Documents to B identical, \(runs) runs"
        report(label, "landed_to_identical", totals)
        report(label, "landed_to_first_commit", records)
        report(label, "landed_to_last_commit", uploads)
        report(label, "last_commit_to_identical", downloads)
        // Issue 14's targets: batching must not slow the single small file.
        BenchOutput.figure(bench: name, case: label, metric: "target_p50_ms", value: 25)
        BenchOutput.figure(bench: name, case: label, metric: "target_p99_ms", value: 50)
    }

    static func placeholders(_ bench: SyncBench, from source: BenchDevice, to target: BenchDevice) async throws {
        var totals: [Duration] = []
        var uploads: [Duration] = []
        for run in 0..<(2 + placeholderRuns) {
            let name = "Large \(run).bin"
            let path = try ItemPath("Documents/\(name)")
            let bytes = noiseBytes(count: placeholderSize, seed: (1 << 20) + UInt64(run))
            let commitsBefore = bench.commits
            let landed = try source.land(bytes, as: name)
            var commits = CommitWatch(bench, commits: commitsBefore, landed: landed)
            try await Measure.poll {
                commits.check()
                return try await target.sync.item(at: path) != nil
            }
            let total = ContinuousClock.now - landed
            guard try await target.sync.item(at: path)?.isPlaceholder == true else {
                throw BenchError("\(name) was downloaded; it should have stayed a placeholder")
            }
            if run >= 2 {
                totals.append(total)
                uploads.append(commits.first ?? total)
            }
            try await Task.sleep(for: settle)
        }
        let label = "4MiB new file (B's eager limit 1MiB), A Documents to B placeholder, \(placeholderRuns) runs"
        report(label, "landed_to_placeholder", totals)
        report(label, "landed_to_first_commit", uploads)
    }

    /// p50, p90 and p99 of `samples`, in milliseconds.
    static func report(_ label: String, _ metric: String, _ samples: [Duration]) {
        BenchOutput.percentiles(bench: name, case: label, metric: metric, samples)
    }
}
