import Foundation
import SyncEngine

/// `sync.delta`: one byte inserted in the middle of a 64 MiB file that both devices hold. Counted: the chunks and
/// chunk bytes the service received (its `/metrics`), every byte each device put on the wire and got back (HTTP
/// included, through a counting proxy), and how long each device's round took; against rsync's delta transfer of
/// the same edit to its daemon on loopback (`--stats`), when rsync is installed.
enum SyncDeltaBenchmark {
    static let name = "sync.delta"
    static let size = 64 << 20

    static func run(in scratch: URL) async throws {
        try await SyncBench.run(in: scratch) { try await measure($0, in: scratch) }
    }

    static func measure(_ bench: SyncBench, in scratch: URL) async throws {
        let upProxy = try ByteCountingProxy(target: bench.server.port)
        let downProxy = try ByteCountingProxy(target: bench.server.port)
        defer {
            upProxy.stop()
            downProxy.stop()
        }
        let deviceA = try await bench.device("A", port: upProxy.port)
        let deviceB = try await bench.device("B", eagerDownloadLimit: 128 << 20, port: downProxy.port)
        let rsync = try await RsyncDaemon.start(in: scratch.appendingPathComponent("rsync", isDirectory: true))
        defer { rsync?.stop() }

        var bytes = noiseBytes(count: size, seed: 64)
        try deviceA.land(bytes, as: "Big.bin")
        let file = deviceA.documents.appendingPathComponent("Big.bin")
        try await deviceA.sync.syncOnce()
        try await deviceB.sync.syncOnce()
        _ = try await rsync?.send(file)

        let before = Counters(bench, upProxy, downProxy)
        bytes.insert(0x2A, at: bytes.count / 2)
        try deviceA.land(bytes, as: "Big.bin")
        let clock = ContinuousClock()
        let upTime = try await clock.measure { try await deviceA.sync.syncOnce() }
        let afterUp = Counters(bench, upProxy, downProxy)
        let downTime = try await clock.measure { try await deviceB.sync.syncOnce() }
        let after = Counters(bench, upProxy, downProxy)
        guard try Data(contentsOf: deviceB.documents.appendingPathComponent("Big.bin")) == bytes else {
            throw BenchError("the other device's copy differs")
        }

        let label = "1 byte inserted in the middle of 64MiB"
        func figure(_ metric: String, _ value: Double) {
            BenchOutput.figure(bench: name, case: label, metric: metric, value: value)
        }
        figure("chunks_uploaded", afterUp.chunksIn - before.chunksIn)
        figure("chunk_bytes_uploaded", afterUp.chunkBytesIn - before.chunkBytesIn)
        figure("A_wire_bytes_sent", afterUp.upSent - before.upSent)
        figure("A_wire_bytes_received", afterUp.upReceived - before.upReceived)
        figure("A_round_ms", Measure.milliseconds(upTime))
        figure("chunk_bytes_downloaded", after.chunkBytesOut - afterUp.chunkBytesOut)
        figure("B_wire_bytes_sent", after.downSent - afterUp.downSent)
        figure("B_wire_bytes_received", after.downReceived - afterUp.downReceived)
        figure("B_round_ms", Measure.milliseconds(downTime))
        let ubiquityTotal = after.upSent + after.upReceived - before.upSent - before.upReceived
        figure("A_wire_bytes_both_ways", ubiquityTotal)

        guard let rsync else {
            FileHandle.standardError.write(Data("sync.delta: rsync is not installed; no comparison with it\n".utf8))
            return
        }
        let (duration, stats) = try await rsync.send(file, options: ["-a", "--stats"])
        let rsyncSent = statistic("Total bytes sent", in: stats)
        let rsyncReceived = statistic("Total bytes received", in: stats)
        figure("rsync_bytes_sent", rsyncSent)
        figure("rsync_bytes_received", rsyncReceived)
        figure("rsync_ms", Measure.milliseconds(duration))
        figure("A_wire_bytes_ratio_vs_rsync", ubiquityTotal / max(1, rsyncSent + rsyncReceived))
    }

    /// A number from rsync's `--stats`, such as `Total bytes sent: 1,234` (0 when missing).
    static func statistic(_ label: String, in stats: String) -> Double {
        guard let line = stats.split(separator: "\n").first(where: { $0.hasPrefix(label + ":") }) else { return 0 }
        let digits = line.dropFirst(label.count + 1).filter { $0.isNumber }
        return Double(String(digits)) ?? 0
    }

    /// The service's chunk figures and the proxies' byte counts at one instant.
    struct Counters {
        var chunksIn, chunkBytesIn, chunkBytesOut: Double
        var upSent, upReceived, downSent, downReceived: Double

        init(_ bench: SyncBench, _ up: ByteCountingProxy, _ down: ByteCountingProxy) {
            chunksIn = bench.figure("ubiquity_chunks_in_total")
            chunkBytesIn = bench.figure("ubiquity_chunk_bytes_in_total")
            chunkBytesOut = bench.figure("ubiquity_chunk_bytes_out_total")
            upSent = Double(up.sent.load(ordering: .relaxed))
            upReceived = Double(up.received.load(ordering: .relaxed))
            downSent = Double(down.sent.load(ordering: .relaxed))
            downReceived = Double(down.received.load(ordering: .relaxed))
        }
    }
}
