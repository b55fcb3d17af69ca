import Crypto
import Foundation
import SyncEngine

/// `chunking`: FastCDC's speed against SHA-256 of the same bytes, the sizes it makes, what one inserted byte costs
/// for several average sizes, and streaming a large file in bounded memory.
enum ChunkingBenchmark {
    static let name = "chunking"
    static let bufferSize = 64 << 20
    static let rounds = 5

    static func run(in scratch: URL) throws {
        // The file first, while the process is small, so its memory figure is not hidden by freed buffers.
        try streamLargeFile(in: scratch)
        let bytes = noiseBytes(count: bufferSize, seed: 11)
        try throughput(bytes)
        distribution(bytes)
        try insertionCost(bytes)
    }

    /// Cut points alone, cut points + SHA-256 of each chunk, and both plus the whole-content SHA-256, each against
    /// SHA-256 of the same 64 MiB in one pass; rounds interleaved, medians.
    static func throughput(_ bytes: Data) throws {
        let chunker = FastCDC()
        var samples: [String: [Duration]] = [:]
        let clock = ContinuousClock()
        var sink = 0
        for _ in 0..<rounds {
            samples["sha256", default: []].append(clock.measure { sink &+= Int(SHA256.hash(data: bytes).hashValue) })
            samples["cut_points", default: []].append(
                clock.measure { sink &+= bytes.withUnsafeBytes { chunker.cutPoints(in: $0) }.count })
            samples["chunk_sha256", default: []].append(
                clock.measure { sink &+= bytes.withUnsafeBytes { chunker.chunkReferences(in: $0) }.count })
            samples["chunk_sha256_content_sha256", default: []].append(
                clock.measure {
                    let chunks = bytes.withUnsafeBytes { chunker.chunkReferences(in: $0) }
                    sink &+= chunks.count &+ SHA256.hash(data: bytes).hashValue
                })
        }
        guard sink != 0 else { throw BenchError("nothing measured") }
        let baseline = Measure.median(samples["sha256"]!)
        let megabytes = Double(bytes.count) / 1_000_000
        let caseName = "64MiB random, in memory, one core"
        for key in ["sha256", "cut_points", "chunk_sha256", "chunk_sha256_content_sha256"] {
            let median = Measure.median(samples[key]!)
            BenchOutput.figure(
                bench: name, case: caseName, metric: "\(key)_MB_per_s", value: megabytes / seconds(median))
            if key != "sha256" {
                BenchOutput.figure(
                    bench: name, case: caseName, metric: "\(key)_ratio_vs_sha256",
                    value: seconds(median) / seconds(baseline))
            }
        }
    }

    /// Mean, standard deviation and extremes of the chunk sizes on random data, default configuration.
    static func distribution(_ bytes: Data) {
        let configuration = FastCDC.Configuration.default
        let lengths = bytes.withUnsafeBytes { FastCDC().chunkLengths(in: $0) }.dropLast()
        let mean = Double(lengths.reduce(0, +)) / Double(lengths.count)
        let variance = lengths.reduce(0.0) { $0 + (Double($1) - mean) * (Double($1) - mean) } / Double(lengths.count)
        let caseName = "64MiB random, \(label(configuration))"
        BenchOutput.figure(bench: name, case: caseName, metric: "chunks", value: Double(lengths.count + 1))
        BenchOutput.figure(bench: name, case: caseName, metric: "mean_KiB", value: mean / 1024)
        BenchOutput.figure(bench: name, case: caseName, metric: "stddev_KiB", value: variance.squareRoot() / 1024)
        BenchOutput.figure(bench: name, case: caseName, metric: "min_KiB", value: Double(lengths.min()!) / 1024)
        BenchOutput.figure(bench: name, case: caseName, metric: "max_KiB", value: Double(lengths.max()!) / 1024)
        let atMaximum = lengths.filter { $0 == configuration.maximumSize }.count
        BenchOutput.figure(
            bench: name, case: caseName, metric: "share_at_maximum", value: Double(atMaximum) / Double(lengths.count))
    }

    static func label(_ configuration: FastCDC.Configuration) -> String {
        "\(configuration.minimumSize >> 10)/\(configuration.averageSize >> 10)/\(configuration.maximumSize >> 10) KiB"
    }

    static func seconds(_ duration: Duration) -> Double { Measure.microseconds(duration) / 1_000_000 }
}
