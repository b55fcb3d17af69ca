import Foundation
import UbiquityProtocol

/// `json.encode`: a version record of eight chunks, and a create request carrying one, encoded as the service stores
/// and answers them (sorted keys, slashes unescaped), by the wire encoder and by Foundation's `JSONEncoder` in the
/// same run, checking the bytes are the same. Medians of eleven rounds of 2,000 encodings each, the two encoders
/// alternating.
enum WireJSONBenchmark {
    static let name = "json.encode"
    static let encodings = 2_000
    static let rounds = 11

    static func run() throws {
        let device = SavingDevice(id: DeviceID(), name: "Ada's laptop")
        let chunks = try (0..<8).map { index in
            ChunkReference(hash: try ChunkHash(String(repeating: "0123456789abcdef", count: 4)), size: 65_536 + index)
        }
        let item = ItemID()
        let version = VersionRecord(
            id: VersionID(), itemID: item, manifest: .file(chunks), contentHash: chunks[0].hash,
            modificationDate: Date(), savingDevice: device, basedOn: VersionID())
        let request = CreateItemRequest(
            id: item, path: try ItemPath("Documents/Reports/2026/Report.txt"), kind: .file, version: version)
        try measure(version, case: "version record, 8 chunks")
        try measure(request, case: "create request with a version of 8 chunks")
    }

    private static func measure(_ value: some Encodable, case label: String) throws {
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let wire = WireJSONEncoder(sortsKeys: true)
        guard try wire.encode(value) == foundation.encode(value) else {
            throw BenchError("the wire encoder's bytes differ from Foundation's for \(label)")
        }
        var ours: [Duration] = []
        var theirs: [Duration] = []
        let clock = ContinuousClock()
        for _ in 0..<rounds {
            ours.append(try clock.measure { for _ in 0..<encodings { _ = try wire.encode(value) } })
            theirs.append(try clock.measure { for _ in 0..<encodings { _ = try foundation.encode(value) } })
        }
        let microseconds = { (samples: [Duration]) in seconds(Measure.median(samples)) * 1e6 / Double(encodings) }
        BenchOutput.figure(bench: name, case: label, metric: "wire_encoder_us", value: microseconds(ours))
        BenchOutput.figure(bench: name, case: label, metric: "foundation_encoder_us", value: microseconds(theirs))
        BenchOutput.figure(
            bench: name, case: label, metric: "speedup_vs_foundation", value: microseconds(theirs) / microseconds(ours))
    }
}
