import Testing
import UbiquityProtocol
import UbiquityTestSupport

@testable import SyncEngine

@Suite("FastCDC: sizes, coverage and resynchronisation", .ownThread(.background))
struct FastCDCPropertyTests {
    static let random = splitMixBytes(count: 16 << 20, seed: 42)

    @Test(
        "Every chunk is within [minimum, maximum] but a shorter last one, and the chunks cover the input exactly",
        arguments: [
            FastCDC.Configuration.default,
            .init(minimumSize: 256, averageSize: 1024, maximumSize: 4096),
            .init(minimumSize: 3000, averageSize: 4096, maximumSize: 5000, normalizationLevel: 3),
        ])
    func bounds(_ configuration: FastCDC.Configuration) throws {
        let chunker = try FastCDC(configuration)
        let inputs = [
            Array(Self.random.prefix(4 << 20)),
            [UInt8](repeating: 0, count: 1 << 20),
            (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 % 251) },
        ]
        for bytes in inputs {
            let lengths = chunker.chunkLengths(in: bytes)
            #expect(lengths.reduce(0, +) == bytes.count)
            for length in lengths.dropLast() {
                #expect((configuration.minimumSize...configuration.maximumSize).contains(length))
            }
            #expect((1...configuration.maximumSize).contains(lengths.last ?? 0))
            let points = chunker.cutPoints(in: bytes)
            #expect(points.last == bytes.count)
            #expect(zip(points, points.dropFirst()).allSatisfy { $0 < $1 })
        }
    }

    @Test("Short inputs are one chunk; empty input has none")
    func shortInputs() {
        let chunker = FastCDC()
        #expect(chunker.cutPoints(in: []) == [])
        #expect(chunker.chunkLengths(in: [9]) == [1])
        let minimum = chunker.configuration.minimumSize
        #expect(chunker.chunkLengths(in: Array(Self.random.prefix(minimum))) == [minimum])
        #expect([UInt8]().withUnsafeBytes { chunker.firstChunkLength(in: $0) } == 0)
    }

    @Test("Concatenating the chunks gives the input back, and each reference hashes its chunk")
    func concatenation() {
        let bytes = Array(Self.random.prefix(2 << 20))
        let chunker = FastCDC()
        let references = bytes.withUnsafeBytes { chunker.chunkReferences(in: $0) }
        var joined: [UInt8] = []
        var start = 0
        for (reference, end) in zip(references, chunker.cutPoints(in: bytes)) {
            let chunk = Array(bytes[start..<end])
            #expect(reference.size == Int64(chunk.count))
            #expect(reference == chunk.withUnsafeBytes { ChunkReference(of: $0) })
            joined += chunk
            start = end
        }
        #expect(joined == bytes)
    }

    @Test(
        "One byte inserted near the start of 16 MiB changes only the first one or two chunks",
        arguments: [0, 1, 5000, 16384, 40000])
    func resynchronises(at offset: Int) {
        let chunker = FastCDC()
        let original = Self.random
        var edited = original
        edited.insert(0xA5, at: offset)
        let before = original.withUnsafeBytes { chunker.chunkReferences(in: $0) }
        let after = edited.withUnsafeBytes { chunker.chunkReferences(in: $0) }
        let known = Set(before)
        let changed = after.filter { !known.contains($0) }
        #expect((1...2).contains(changed.count), "changed chunks: \(changed.map(\.size))")
        // The changed chunks are the first ones; everything after them is the original's tail, chunk for chunk.
        #expect(after.prefix(changed.count).allSatisfy { !known.contains($0) })
        #expect(Array(after.dropFirst(changed.count)) == Array(before.suffix(after.count - changed.count)))
    }

    @Test("The same one-byte insertion at a cut point, and just before one, resynchronises too")
    func insertionAtCutPoints() {
        let chunker = FastCDC()
        let original = Array(Self.random.prefix(4 << 20))
        let points = chunker.cutPoints(in: original)
        for offset in [points[0], points[0] - 1, points[1] - 30, points[2] + 1] {
            var edited = original
            edited.insert(0x5A, at: offset)
            let known = Set(original.withUnsafeBytes { chunker.chunkReferences(in: $0) })
            let changed = edited.withUnsafeBytes { chunker.chunkReferences(in: $0) }.filter { !known.contains($0) }
            #expect((1...2).contains(changed.count), "insertion at \(offset): \(changed.count) chunks changed")
        }
    }
}
