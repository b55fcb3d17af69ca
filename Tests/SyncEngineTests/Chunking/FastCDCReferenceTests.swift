import ChildProcess
import Foundation
import Testing
import UbiquityTestSupport

@testable import SyncEngine

/// The cross-check: the Python reference, written from the paper's pseudo-code and not from the Swift, must find the
/// same cut points on inputs neither has seen before.
@Suite("FastCDC: agrees with the independent Python reference", .ownThread(.background))
struct FastCDCReferenceTests {
    /// Configurations that make many chunks of small inputs, so the Python side stays quick, plus the default.
    static let configurations: [FastCDC.Configuration] = [
        .default,
        .init(minimumSize: 256, averageSize: 1024, maximumSize: 4096),
        .init(minimumSize: 64, averageSize: 512, maximumSize: 1500, normalizationLevel: 1),
        .init(minimumSize: 2048, averageSize: 8192, maximumSize: 65536, normalizationLevel: 3),
    ]

    @Test(
        "Random inputs and low-entropy inputs give the same cut points",
        .enabled(
            if: python3Executable != nil,
            "python3 is not on PATH: the cross-check against the Python reference is skipped"),
        arguments: configurations)
    func sameCutPoints(_ configuration: FastCDC.Configuration) async throws {
        let chunker = try FastCDC(configuration)
        let directory = try ChunkingScratch()
        defer { directory.remove() }
        let seed = UInt64.random(in: 0...UInt64.max)
        let count = configuration == .default ? 2 << 20 : 300_000
        var generator = SplitMix64(state: seed)
        let inputs: [(String, [UInt8])] = [
            ("random", splitMixBytes(count: count, seed: seed)),
            ("random, odd length", splitMixBytes(count: count / 3 + 7, seed: seed ^ 1)),
            // Long runs of one byte with a few random bytes: cuts at the maximum and after the average.
            ("runs", (0..<count).map { _ in generator.next() % 4096 == 0 ? UInt8.random(in: 0...255) : 7 }),
            // A repeated 3 KiB pattern with a few changes: the loose mask's territory.
            (
                "pattern",
                (0..<count).map { index in
                    generator.next() % 50_000 == 0 ? UInt8.random(in: 0...255) : UInt8(truncatingIfNeeded: index % 3000)
                }
            ),
        ]
        for (name, bytes) in inputs {
            let expected = try await offPool { try referenceCutPoints(bytes, configuration, in: directory) }
            #expect(
                chunker.cutPoints(in: bytes) == expected,
                "\(name) input of \(bytes.count) bytes (seed \(seed)), \(configuration)")
        }
    }

    /// Runs `fastcdc_reference.py cut` on `bytes`.
    private func referenceCutPoints(
        _ bytes: [UInt8], _ configuration: FastCDC.Configuration, in directory: ChunkingScratch
    ) throws -> [Int] {
        let input = try directory.file("input", bytes)
        let output = directory.url.appendingPathComponent("cut-points.json")
        let process = try ChildProcess(
            try #require(python3Executable),
            arguments: [
                vectorsFolder.appendingPathComponent("fastcdc_reference.py").path, "cut",
                "\(configuration.minimumSize)", "\(configuration.averageSize)", "\(configuration.maximumSize)",
                "\(configuration.normalizationLevel)", input.path, output.path,
            ])
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the Python reference ran")
        return try JSONDecoder().decode([Int].self, from: Data(contentsOf: output))
    }
}

extension FastCDC.Configuration: CustomTestStringConvertible {
    public var testDescription: String {
        "\(minimumSize)/\(averageSize)/\(maximumSize) level \(normalizationLevel)"
    }
}
