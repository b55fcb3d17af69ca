import Crypto
import Foundation
import Testing
import UbiquityProtocol

@testable import SyncEngine

@Suite("FileChunker: streaming equals chunking in memory")
struct FileChunkerTests {
    static let bytes = splitMixBytes(count: (3 << 20) + 12345, seed: 7)

    @Test(
        "Chunks, content hash and the bytes handed over equal the in-memory result, whatever the read size",
        arguments: [7, 4096, 65537, 1 << 20])
    func streamingEqualsInMemory(readSize: Int) throws {
        let chunker = try FastCDC(.init(minimumSize: 2048, averageSize: 8192, maximumSize: 32768))
        // 7-byte reads make one system call per 7 bytes: a shorter input keeps the test quick.
        let bytes = readSize < 100 ? Array(Self.bytes.prefix(300_000)) : Self.bytes
        let expected = bytes.withUnsafeBytes { chunker.chunkReferences(in: $0) }
        let directory = try ChunkingScratch()
        defer { directory.remove() }
        var handedOver: [UInt8] = []
        var calls = 0
        let content = try FileChunker(chunker: chunker, readSize: readSize)
            .chunksAndContentHash(ofFileAt: directory.file("input", bytes)) { chunk, chunkBytes in
                #expect(Int64(chunkBytes.count) == chunk.size)
                #expect(chunk.hash == expected[calls].hash)
                handedOver += chunkBytes
                calls += 1
            }
        #expect(content.chunks == expected)
        #expect(calls == expected.count)
        #expect(handedOver == bytes)
        #expect(content.size == Int64(bytes.count))
        #expect(content.contentHash == ChunkHash(SHA256.hash(data: bytes)))
        #expect(content.manifest == .file(expected))
    }

    @Test("A FileHandle is read from its current offset to its end, and left open")
    func fileHandleFromOffset() throws {
        let chunker = FastCDC()
        let directory = try ChunkingScratch()
        defer { directory.remove() }
        let handle = try FileHandle(forReadingFrom: directory.file("input", Self.bytes))
        defer { try? handle.close() }
        try handle.seek(toOffset: 1000)
        let chunks = try FileChunker(chunker: chunker).chunks(of: handle)
        #expect(chunks == Self.bytes.dropFirst(1000).withUnsafeBytes { chunker.chunkReferences(in: $0) })
        #expect(try handle.offset() == UInt64(Self.bytes.count))

        try handle.seek(toOffset: 0)
        let content = try FileChunker(chunker: chunker, readSize: 4096).chunksAndContentHash(of: handle)
        #expect(content.chunks == Self.bytes.withUnsafeBytes { chunker.chunkReferences(in: $0) })
    }

    @Test(
        "A read window sized for a shorter file (one that grew since it was measured) grows and reads it whole",
        arguments: [(0, 4096), (10, 4096), (40000, 65537), (Int64(1) << 30, 4096)])
    func windowGrows(expected: Int64, readSize: Int) throws {
        let directory = try ChunkingScratch()
        defer { directory.remove() }
        let bytes = Array(Self.bytes.prefix(300_000))
        let descriptor = open(try directory.file("input", bytes).path, O_RDONLY)
        defer { close(descriptor) }
        let retained = 32768
        var window = ReadWindow(retaining: retained, readSize: readSize, expecting: expected)
        var read: [UInt8] = []
        var step = 1
        while true {
            try window.fill(toAtLeast: retained, from: descriptor, source: "input")
            let available = window.bytes
            guard !available.isEmpty else { break }
            #expect(available.count >= retained || window.isAtEnd)
            // Uneven amounts consumed, so the held bytes sit anywhere in the buffer when it is compacted or grown.
            let taken = min(available.count, 1 + (step * 7919) % retained)
            read += available[..<taken]
            window.consume(taken)
            step += 1
        }
        #expect(read == bytes)
    }

    @Test("An empty file has no chunks and the SHA-256 of nothing")
    func emptyFile() throws {
        let directory = try ChunkingScratch()
        defer { directory.remove() }
        let content = try FileChunker().chunksAndContentHash(ofFileAt: directory.file("empty", []))
        #expect(content.chunks.isEmpty)
        #expect(content.size == 0)
        #expect(content.contentHash.string == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("A missing file or a directory is refused with readFailed")
    func unreadable() throws {
        let directory = try ChunkingScratch()
        defer { directory.remove() }
        for url in [directory.url.appendingPathComponent("missing"), directory.url] {
            do {
                _ = try FileChunker().chunksAndContentHash(ofFileAt: url)
                Issue.record("read \(url.path)")
            } catch let error as ChunkingError {
                #expect(error.code == .readFailed)
                #expect(error.message.contains(url.lastPathComponent))
            }
        }
    }

    @Test("An error thrown by the closure stops chunking and comes out unchanged")
    func closureError() throws {
        struct Stop: Error {}
        let directory = try ChunkingScratch()
        defer { directory.remove() }
        let file = try directory.file("input", Self.bytes)
        var calls = 0
        #expect(throws: Stop.self) {
            _ = try FileChunker().chunksAndContentHash(ofFileAt: file) { _, _ in
                calls += 1
                if calls == 2 { throw Stop() }
            }
        }
        #expect(calls == 2)
    }
}
