import Foundation
import SyncEngine
import UbiquityProtocol

extension ChunkingBenchmark {
    static let insertionTrials = 16

    /// The evidence for the average size: one byte inserted near the middle of 64 MiB of random data, at
    /// `insertionTrials` different offsets, for averages of 16, 32, 64 and 128 KiB (minimum a quarter, maximum four
    /// times the average). The chunks of the edited content that the original lacks are what a device uploads and
    /// every other device downloads; the manifest's length is what a full (not delta) manifest costs.
    static func insertionCost(_ bytes: Data) throws {
        var offsets = SplitMix(state: 99)
        let trialOffsets = (0..<insertionTrials).map { _ in bytes.count / 2 + Int(offsets.next() % (4 << 20)) }
        for average in [16 << 10, 32 << 10, 64 << 10, 128 << 10] {
            let configuration = FastCDC.Configuration(
                minimumSize: average / 4, averageSize: average, maximumSize: average * 4)
            let chunker = try FastCDC(configuration)
            let original = bytes.withUnsafeBytes { chunker.chunkReferences(in: $0) }
            let known = Set(original.map(\.hash))
            var changedBytes: [Int64] = []
            var changedChunks: [Int] = []
            for offset in trialOffsets {
                var edited = bytes
                edited.insert(0xA5, at: offset)
                let changed = edited.withUnsafeBytes { chunker.chunkReferences(in: $0) }.filter {
                    !known.contains($0.hash)
                }
                changedBytes.append(changed.reduce(0) { $0 + $1.size })
                changedChunks.append(changed.count)
            }
            let manifest = try JSONEncoder().encode(ContentManifest.file(original))
            let caseName = "1 byte inserted in 64MiB, \(label(configuration)), \(insertionTrials) offsets"
            let meanBytes = Double(changedBytes.reduce(0, +)) / Double(changedBytes.count)
            BenchOutput.figure(bench: name, case: caseName, metric: "changed_KB_mean", value: meanBytes / 1000)
            BenchOutput.figure(
                bench: name, case: caseName, metric: "changed_KB_max", value: Double(changedBytes.max()!) / 1000)
            BenchOutput.figure(
                bench: name, case: caseName, metric: "changed_chunks_mean",
                value: Double(changedChunks.reduce(0, +)) / Double(changedChunks.count))
            BenchOutput.figure(
                bench: name, case: caseName, metric: "changed_chunks_max", value: Double(changedChunks.max()!))
            BenchOutput.figure(
                bench: name, case: caseName, metric: "changed_plus_full_manifest_KB_mean",
                value: (meanBytes + Double(manifest.count)) / 1000)
            BenchOutput.figure(bench: name, case: caseName, metric: "chunks", value: Double(original.count))
            BenchOutput.figure(
                bench: name, case: caseName, metric: "manifest_json_KB", value: Double(manifest.count) / 1000)
        }
    }
}

/// SplitMix64, for the benchmark's reproducible offsets.
struct SplitMix {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
