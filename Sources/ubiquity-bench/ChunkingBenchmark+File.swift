import Foundation
import SyncEngine

extension ChunkingBenchmark {
    static let fileSize = 256 << 20

    /// A 256 MiB file chunked and hashed (chunks and whole content) by ``FileChunker`` in 1 MiB reads, with the
    /// process's resident memory sampled at every chunk: it must grow by about one maximum chunk plus one read, not
    /// with the file. The file was just written, so it is read from the page cache.
    static func streamLargeFile(in scratch: URL) throws {
        let url = scratch.appendingPathComponent("large")
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw BenchError("cannot create \(url.path)")
        }
        let writer = try FileHandle(forWritingTo: url)
        for piece in 0..<(fileSize >> 22) {
            try writer.write(contentsOf: noiseBytes(count: 4 << 20, seed: 1000 + UInt64(piece)))
        }
        try writer.close()

        let baseline = Memory.residentBytes
        var peak = baseline
        var count = 0
        var content: ChunkedContent?
        let duration = try ContinuousClock().measure {
            content = try FileChunker().chunksAndContentHash(ofFileAt: url) { _, _ in
                count += 1
                if count % 64 == 0 { peak = max(peak, Memory.residentBytes) }
            }
        }
        peak = max(peak, Memory.residentBytes)
        guard content?.size == Int64(fileSize) else { throw BenchError("chunked \(content?.size ?? 0) bytes") }
        let caseName = "256MiB file, 1MiB reads, chunks + content SHA-256"
        BenchOutput.figure(
            bench: name, case: caseName, metric: "MB_per_s", value: Double(fileSize) / 1_000_000 / seconds(duration))
        BenchOutput.figure(bench: name, case: caseName, metric: "chunks", value: Double(count))
        BenchOutput.figure(
            bench: name, case: caseName, metric: "resident_growth_MiB", value: Double(peak - baseline) / 1_048_576)
    }
}
