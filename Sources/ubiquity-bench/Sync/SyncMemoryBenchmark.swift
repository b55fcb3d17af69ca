import Foundation
import SyncEngine
import UbiquityProtocol

/// `sync.memory`: the resident memory of an engine whose container holds 100,000 small files (100 folders of
/// 1,000, 256 B–1.3 KiB of noise each), in a process of its own (this executable again, with ``EngineProcess``'s
/// environment variable set) so the service's memory is not counted:
///
/// 1. **initial**: the engine starts on the full container and uploads it all; its peak (`VmHWM`) and current
///    (`VmRSS`) resident memory once the service has every file, and again after 10 s idle; the upload's duration.
/// 2. **restart**: the engine stopped and started again on the same, fully synced container (a start-up scan of
///    100,000 files that finds nothing to send): peak and current after 20 s.
///
/// `UBIQUITY_BENCH_FILES` sets another file count (the figures say which was used). An upload still under way after
/// `UBIQUITY_BENCH_UPLOAD_LIMIT` seconds (default 900) is measured there: the files uploaded so far and the memory
/// then, and no restart.
enum SyncMemoryBenchmark {
    static let name = "sync.memory"
    static let folders = 100
    static let idle = Duration.seconds(10)
    static let restartWait = Duration.seconds(20)

    /// How long the initial upload may take (`UBIQUITY_BENCH_UPLOAD_LIMIT`, seconds; default 15 minutes).
    static var uploadLimit: Duration {
        .seconds(ProcessInfo.processInfo.environment["UBIQUITY_BENCH_UPLOAD_LIMIT"].flatMap { Int($0) } ?? 900)
    }

    static var fileCount: Int {
        ProcessInfo.processInfo.environment["UBIQUITY_BENCH_FILES"].flatMap { Int($0) } ?? 100_000
    }

    static var label: String { "\(fileCount) files in \(folders) folders, engine in its own process" }

    static func run(in scratch: URL) async throws {
        if let specification = EngineProcess.specification {
            try await EngineProcess.serve(specification)
            return
        }
        try await SyncBench.run(in: scratch) { try await measure($0) }
    }

    static func measure(_ bench: SyncBench) async throws {
        let (client, device) = try await bench.signIn("A")
        guard let token = client.token else { throw BenchError("no token") }
        let layout = ContainerLayout(
            root: bench.roots.appendingPathComponent("A", isDirectory: true), container: bench.container)
        try layout.create()
        let writing = try ContinuousClock().measure { try writeFiles(in: layout.documents) }
        figure("files_written_s", Measure.seconds(writing))
        let specification = EngineProcess.Specification(
            baseURL: bench.server.base, token: token, device: device,
            root: layout.folder.deletingLastPathComponent().path,
            container: bench.container.string)

        // 1. The initial upload, up to the time limit.
        let start = ContinuousClock.now
        let first = try EngineProcess.launch(specification)
        guard let synced = try await waitForUpload(bench, until: start + uploadLimit) else {
            let uploaded = bench.figure("ubiquity_chunks_in_total")
            figure("files_uploaded_at_limit", uploaded)
            figure("files_per_s_at_limit", uploaded / Measure.seconds(uploadLimit))
            try first.ask("upload_limit_\(uploadLimit.components.seconds)s")
            try await first.end()
            figure("target_MB", 100)
            FileHandle.standardError.write(
                Data("sync.memory: the upload did not finish within \(uploadLimit); no restart figures\n".utf8))
            return
        }
        figure("initial_upload_s", Measure.seconds(synced - start))
        figure("initial_files_per_s", Double(fileCount) / Measure.seconds(synced - start))
        try first.ask("initial_synced")
        try await Task.sleep(for: idle)
        try first.ask("initial_idle_10s")
        try await first.end()

        // 2. A restart on the synced container.
        let second = try EngineProcess.launch(specification)
        try await Task.sleep(for: restartWait)
        try second.ask("restart_after_20s")
        try await second.end()
        figure("target_MB", 100)
    }

    /// Writes the files: folder `f00`…`f99`, each with its share of the files.
    static func writeFiles(in documents: URL) throws {
        let perFolder = (fileCount + folders - 1) / folders
        var written = 0
        for folder in 0..<folders where written < fileCount {
            let directory = documents.appendingPathComponent(String(format: "f%02d", folder), isDirectory: true)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for index in 0..<perFolder where written < fileCount {
                let bytes = noiseBytes(count: 256 + (written * 37) % 1024, seed: UInt64(written) + 7)
                guard
                    FileManager.default.createFile(
                        atPath: directory.appendingPathComponent("note-\(index).txt").path, contents: bytes)
                else { throw BenchError("cannot write file \(written)") }
                written += 1
            }
        }
    }

    /// Waits until the service holds a chunk of every file and its commits have been quiet for a second: the
    /// instant of the last commit; `nil` when `deadline` passes first.
    static func waitForUpload(
        _ bench: SyncBench, until deadline: ContinuousClock.Instant
    ) async throws -> ContinuousClock.Instant? {
        var commits = bench.commits
        var lastCommit = ContinuousClock.now
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            let now = bench.commits
            if now != commits {
                commits = now
                lastCommit = .now
            }
            if bench.figure("ubiquity_chunks_in_total") >= Double(fileCount),
                ContinuousClock.now - lastCommit > .seconds(1)
            {
                return lastCommit
            }
        }
        return nil
    }

    static func figure(_ metric: String, _ value: Double) {
        BenchOutput.figure(bench: name, case: label, metric: metric, value: value)
    }
}

extension Measure {
    /// `duration` in seconds.
    static func seconds(_ duration: Duration) -> Double { microseconds(duration) / 1_000_000 }
}
