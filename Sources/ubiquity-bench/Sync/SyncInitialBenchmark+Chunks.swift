import Crypto
import Foundation
import NIOCore
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#endif

extension SyncInitialBenchmark {
    static let probeChunks = 1000
    static let probeSize = 72 << 10

    /// Where a large transfer's time goes: the cost of one chunk of the engine's average size (72 KiB) sent to the
    /// service and fetched back, one request at a time (as the engine does) and from 4 concurrent requests, against
    /// writing and flushing the same bytes to files by hand (the service flushes every chunk it receives).
    static func chunkCosts(_ bench: SyncBench, in scratch: URL) async throws {
        let server = bench.server
        let pieces = (0..<probeChunks).map {
            ByteBuffer(bytes: noiseBytes(count: probeSize, seed: 77_000 + UInt64($0)))
        }
        let clock = ContinuousClock()

        let folder = scratch.appendingPathComponent("raw", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let raw = try clock.measure {
            for (index, piece) in pieces.enumerated() {
                try flushedWrite(piece, to: folder.appendingPathComponent("\(index)"))
            }
        }
        perChunk("raw_write_fsync", raw)

        let half = probeChunks / 2
        var uploaded: [ChunkReference] = []
        let sequential = try await clock.measure {
            for piece in pieces[..<half] { uploaded.append(try await server.upload(piece)) }
        }
        perChunk("put_sequential", sequential, count: half)
        let concurrent = try await clock.measure {
            try await withThrowingTaskGroup(of: [ChunkReference].self) { group in
                for lane in 0..<4 {
                    group.addTask {
                        var done: [ChunkReference] = []
                        for index in stride(from: half + lane, to: probeChunks, by: 4) {
                            done.append(try await server.upload(pieces[index]))
                        }
                        return done
                    }
                }
                for try await done in group { uploaded += done }
            }
        }
        perChunk("put_4_concurrent", concurrent, count: probeChunks - half)
        let hashes = uploaded.map(\.hash)

        let fetchSequential = try await clock.measure {
            for hash in hashes[..<half] { try await server.send(.GET, server.url("chunks/\(hash)")) }
        }
        perChunk("get_sequential", fetchSequential, count: half)
        let rest = Array(hashes[half...])
        let fetchConcurrent = try await clock.measure {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<4 {
                    group.addTask {
                        for index in stride(from: lane, to: rest.count, by: 4) {
                            try await server.send(.GET, server.url("chunks/\(rest[index])"))
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        perChunk("get_4_concurrent", fetchConcurrent, count: rest.count)
    }

    private static func perChunk(_ metric: String, _ duration: Duration, count: Int = probeChunks) {
        BenchOutput.figure(
            bench: name, case: "\(probeChunks) chunks of 72KiB, service on loopback", metric: "\(metric)_ms_per_chunk",
            value: Measure.milliseconds(duration) / Double(count))
    }

    /// Writes `bytes` to a new file and flushes it.
    private static func flushedWrite(_ bytes: ByteBuffer, to url: URL) throws {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw BenchError("cannot create \(url.path)") }
        defer { close(descriptor) }
        let written = bytes.withUnsafeReadableBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.readableBytes, fsync(descriptor) == 0 else { throw BenchError("write failed") }
    }
}
