import Crypto
import Foundation
import Testing
import UbiquityProtocol
import UbiquityTestSupport

@testable import SyncEngine

/// `Vectors/fastcdc-vectors.json`, made by the Python reference (`fastcdc_reference.py vectors`).
struct VectorFile: Decodable {
    struct Input: Decodable {
        var kind: String
        var seed: UInt64?
        var count: Int

        var bytes: [UInt8] {
            kind == "zeros" ? [UInt8](repeating: 0, count: count) : splitMixBytes(count: count, seed: seed ?? 0)
        }
    }

    struct Vector: Decodable, CustomTestStringConvertible {
        var name: String
        var configuration: FastCDC.Configuration
        var strictMask: String
        var looseMask: String
        var input: Input
        var inputSHA256: String
        var cutPoints: [Int]
        var chunkSHA256: [String]?

        var testDescription: String { name }
    }

    var gearSeed: String
    var gearTableHead: [String]
    var gearTableTail: [String]
    var vectors: [Vector]

    static func load() throws -> VectorFile {
        let data = try Data(contentsOf: vectorsFolder.appendingPathComponent("fastcdc-vectors.json"))
        return try JSONDecoder().decode(VectorFile.self, from: data)
    }
}

private func hex64(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: 16 - digits.count) + digits
}

@Suite("FastCDC: the checked-in test vectors", .ownThread(.background))
struct FastCDCVectorTests {
    static let file = try! VectorFile.load()

    @Test("The Gear table and its seed match the reference's")
    func gearTable() {
        #expect(Self.file.gearSeed == hex64(FastCDC.gearSeed))
        #expect(Self.file.gearTableHead == FastCDC.gearTable.prefix(4).map(hex64))
        #expect(Self.file.gearTableTail == FastCDC.gearTable.suffix(4).map(hex64))
    }

    @Test("The vectors cover the sizes that matter")
    func coverage() {
        let names = Set(Self.file.vectors.map(\.name))
        for name in ["1MiB", "8MiB", "zeros-1MiB", "empty", "1 byte", "min-1", "min", "max+1"] {
            #expect(names.contains(name), "a vector named \(name)")
        }
    }

    @Test("Cut points, masks and chunk hashes equal the reference's, in memory and streamed", arguments: file.vectors)
    func vector(_ vector: VectorFile.Vector) throws {
        let chunker = try FastCDC(vector.configuration)
        #expect(hex64(chunker.strictMask) == vector.strictMask)
        #expect(hex64(chunker.looseMask) == vector.looseMask)
        let bytes = vector.input.bytes
        try #require(
            SHA256.hash(data: bytes).hexString == vector.inputSHA256, "the input generator matches the reference's")
        #expect(chunker.cutPoints(in: bytes) == vector.cutPoints)
        let references = bytes.withUnsafeBytes { chunker.chunkReferences(in: $0) }
        if let hashes = vector.chunkSHA256 {
            #expect(references.map(\.hash.string) == hashes)
        }

        let directory = try ChunkingScratch()
        defer { directory.remove() }
        let content = try FileChunker(chunker: chunker, readSize: 65536)
            .chunksAndContentHash(ofFileAt: directory.file("input", bytes))
        #expect(content.chunks == references)
        #expect(content.size == Int64(bytes.count))
        #expect(content.contentHash.string == vector.inputSHA256)
    }
}

extension SHA256.Digest {
    fileprivate var hexString: String { ChunkHash(self).string }
}
