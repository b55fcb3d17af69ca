import Foundation
import SyncEngine
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// `sync.initial`: a new 1 GiB file (noise) from A to B through both running engines and the service on loopback,
/// from the file landing in A's `Documents/` to B's copy in place (checked by the engine against the content hash),
/// split at A's commit; against `rsync -a` of the same file, just written and so in the page cache for both, to an
/// rsync daemon on loopback (and `rsync -a --fsync`, since the engine and the service flush what they write).
enum SyncInitialBenchmark {
    static let name = "sync.initial"
    static let size = ProcessInfo.processInfo.environment["UBIQUITY_BENCH_SIZE"].flatMap { Int($0) } ?? 1 << 30
    static var label: String { "\(size >> 20)MiB new file, A to B, loopback" }

    static func run(in scratch: URL) async throws {
        try await SyncBench.run(in: scratch) { try await measure($0, in: scratch) }
    }

    static func measure(_ bench: SyncBench, in scratch: URL) async throws {
        let deviceA = try await bench.device("A")
        let deviceB = try await bench.device("B", eagerDownloadLimit: Int64(size) * 2)
        try FileManager.default.createDirectory(at: deviceA.staging, withIntermediateDirectories: true)
        let staged = deviceA.staging.appendingPathComponent("Big.bin")
        try writeNoise(count: size, seed: 1024, to: staged)

        let rsyncTime = try await rsyncBaseline(staged, in: scratch)
        let chunkTime = try ContinuousClock().measure { _ = try FileChunker().chunksAndContentHash(ofFileAt: staged) }
        figure("chunk_and_hash_alone_s", seconds(chunkTime))

        let engines = [deviceA.start(), deviceB.start()]
        do {
            try await engineTransfer(bench, staged, from: deviceA, to: deviceB, rsyncTime: rsyncTime)
        } catch {
            for engine in engines { await engine.stop() }
            throw error
        }
        for engine in engines { await engine.stop() }
        try await chunkCosts(bench, in: scratch)
    }

    /// `rsync -a` and `rsync -a --fsync` of `file` to a daemon on loopback, three of each interleaved; the median time of
    /// the first (`nil` without rsync).
    static func rsyncBaseline(_ file: URL, in scratch: URL) async throws -> Duration? {
        guard let rsync = try await RsyncDaemon.start(in: scratch.appendingPathComponent("rsync", isDirectory: true))
        else {
            FileHandle.standardError.write(
                Data("sync.initial: rsync is not installed; no comparison with it (apt-get install rsync)\n".utf8))
            return nil
        }
        defer { rsync.stop() }
        let copy = rsync.module.appendingPathComponent(file.lastPathComponent)
        var plain: [Duration] = []
        var flushed: [Duration] = []
        for _ in 0..<3 {
            plain.append(try await rsync.send(file).0)
            try FileManager.default.removeItem(at: copy)
            flushed.append(try await rsync.send(file, options: ["-a", "--fsync"]).0)
            try FileManager.default.removeItem(at: copy)
        }
        figure("rsync_s", seconds(Measure.median(plain)))
        figure("rsync_fsync_s", seconds(Measure.median(flushed)))
        return Measure.median(plain)
    }

    static func engineTransfer(
        _ bench: SyncBench, _ staged: URL, from source: BenchDevice, to target: BenchDevice, rsyncTime: Duration?
    ) async throws {
        // Both engines are up and hear push once a small file has made the trip.
        let ready = Data("ready".utf8)
        try source.land(ready, as: "Ready.txt")
        try await Measure.poll(every: .milliseconds(10), for: .seconds(60)) {
            (try? Data(contentsOf: target.documents.appendingPathComponent("Ready.txt"))) == ready
        }
        try await Task.sleep(for: .milliseconds(500))

        let path = try ItemPath("Documents/Big.bin")
        let arrival = target.documents.appendingPathComponent("Big.bin")
        let commitsBefore = bench.commits
        let landed = ContinuousClock.now
        guard rename(staged.path, source.documents.appendingPathComponent("Big.bin").path) == 0 else {
            throw BenchError("rename into Documents failed")
        }
        var commits = CommitWatch(bench, commits: commitsBefore, landed: landed)
        var known: Duration?
        var polls = 0
        try await Measure.poll(every: .milliseconds(5), for: .seconds(900)) {
            // The service's count is read from its whole `/metrics` text: every fourth look, since each costs CPU the
            // engines share (every look was 5% of the run's).
            polls += 1
            if polls % 4 == 1 { commits.check() }
            if known == nil, try await target.sync.item(at: path) != nil { known = .now - landed }
            return (try? FileManager.default.attributesOfItem(atPath: arrival.path)[.size] as? Int) == size
        }
        let total = ContinuousClock.now - landed
        commits.check()
        let (sent, received) = (try await source.sync.item(at: path), try await target.sync.item(at: path))
        guard let sent, let received, sent.contentHash == received.contentHash, !received.isPlaceholder else {
            throw BenchError("B's copy is not A's content")
        }
        figure("landed_to_first_commit_s", seconds(commits.first ?? total))
        figure("landed_to_last_commit_s", seconds(commits.last ?? total))
        figure("landed_to_B_placeholder_s", seconds(known ?? total))
        figure("landed_to_B_identical_s", seconds(total))
        figure("MB_per_s", Double(size) / 1_000_000 / seconds(total))
        if let rsyncTime {
            figure("ratio_vs_rsync", seconds(total) / seconds(rsyncTime))
            figure("target_ratio_vs_rsync", 1.5)
        }
    }

    static func figure(_ metric: String, _ value: Double) {
        BenchOutput.figure(bench: name, case: label, metric: metric, value: value)
    }

    static func seconds(_ duration: Duration) -> Double { Measure.seconds(duration) }
}
