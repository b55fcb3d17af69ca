import Foundation
import UbiquityProtocol

/// `json`: a version record of eight chunks, and a create request carrying one, encoded as the service stores and
/// answers them (sorted keys, slashes unescaped) and decoded again, by the wire encoder and decoder and by
/// Foundation's `JSONEncoder` and `JSONDecoder` in the same run, checking the bytes and the values are the same.
/// Medians of eleven rounds of 2,000 each, the two alternating.
enum WireJSONBenchmark {
    static let name = "json"
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

    private static func measure<T: Codable & Equatable>(_ value: T, case label: String) throws {
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let wire = WireJSONEncoder(sortsKeys: true)
        guard try wire.encode(value) == foundation.encode(value) else {
            throw BenchError("the wire encoder's bytes differ from Foundation's for \(label)")
        }
        let text = try foundation.encode(value)
        let decoder = JSONDecoder()
        guard try WireJSONDecoder().decode(T.self, from: text) == value, try decoder.decode(T.self, from: text) == value
        else { throw BenchError("the decoders do not read back \(label)") }
        var samples: [String: [Duration]] = [:]
        let clock = ContinuousClock()
        for _ in 0..<rounds {
            samples["encode_wire", default: []].append(
                try clock.measure { for _ in 0..<encodings { _ = try wire.encode(value) } })
            samples["encode_foundation", default: []].append(
                try clock.measure { for _ in 0..<encodings { _ = try foundation.encode(value) } })
            samples["decode_wire", default: []].append(
                try clock.measure { for _ in 0..<encodings { _ = try WireJSONDecoder().decode(T.self, from: text) } })
            samples["decode_foundation", default: []].append(
                try clock.measure { for _ in 0..<encodings { _ = try decoder.decode(T.self, from: text) } })
        }
        func microseconds(_ key: String) -> Double {
            seconds(Measure.median(samples[key]!)) * 1e6 / Double(encodings)
        }
        for step in ["encode", "decode"] {
            let ours = microseconds("\(step)_wire")
            let theirs = microseconds("\(step)_foundation")
            BenchOutput.figure(bench: name, case: label, metric: "\(step)_wire_us", value: ours)
            BenchOutput.figure(bench: name, case: label, metric: "\(step)_foundation_us", value: theirs)
            BenchOutput.figure(bench: name, case: label, metric: "\(step)_speedup_vs_foundation", value: theirs / ours)
        }
    }
}
