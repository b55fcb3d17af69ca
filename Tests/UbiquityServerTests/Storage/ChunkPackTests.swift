import Foundation
import Testing
import UbiquityProtocol
import UbiquityServer

/// ``FileChunkStore``'s packs: small chunks go into a few large files, larger ones (and those past the memory budget)
/// into files of their own, and every chunk reads back byte for byte, from the same store and from one opened again.
@Suite("Chunk store: small chunks packed")
struct ChunkPackTests {
    typealias Fixtures = StorageFixtures

    /// Random bytes of `count`.
    static func bytes(_ count: Int, _ random: inout SystemRandomNumberGenerator) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    /// The files under `folder`, recursively.
    static func files(under folder: URL) -> [String] {
        guard let walk = FileManager.default.enumerator(atPath: folder.path) else { return [] }
        return walk.compactMap { $0 as? String }.filter { name in
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(
                atPath: folder.appendingPathComponent(name).path, isDirectory: &isDirectory)
            return exists && !isDirectory.boolValue
        }
    }

    @Test("Batches finished at once from eight requests: every chunk packed, few packs, all read back after reopening")
    func concurrentBatches() async throws {
        try await withTemporaryDirectory { directory in
            let root = directory.appendingPathComponent("chunks", isDirectory: true)
            // Small packs, so that the batches also fill some and begin new ones.
            let store = try FileChunkStore(root: root, packBytes: 1 << 20)
            let ada = AccountID()
            let grace = AccountID()
            let written = try await withThrowingTaskGroup(of: [(AccountID, ChunkHash, [UInt8])].self) { group in
                for request in 0..<8 {
                    group.addTask {
                        var random = SystemRandomNumberGenerator()
                        var written: [(AccountID, ChunkHash, [UInt8])] = []
                        for _ in 0..<5 {
                            var batch: [(upload: any ChunkUpload, hash: ChunkHash)] = []
                            for index in 0..<20 {
                                let account = (request + index) % 3 == 0 ? grace : ada
                                let bytes = Self.bytes(Int.random(in: 0...20_000, using: &random), &random)
                                let upload = try await store.beginUpload(for: account)
                                try bytes.withUnsafeBytes { try upload.write($0) }
                                let hash = Fixtures.sha256(bytes)
                                batch.append((upload, hash))
                                written.append((account, hash, bytes))
                            }
                            try await store.finish(batch)
                        }
                        return written
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(written.count == 800)
            #expect(store.unfinishedUploadsInMemory == 0)
            let packs = Self.files(under: root.appendingPathComponent("packs")).filter { $0.hasSuffix(".pack") }
            #expect((4...40).contains(packs.count), "about 8 MiB in packs of 1 MiB: \(packs)")
            #expect(Self.files(under: root.appendingPathComponent(ada.string)).isEmpty, "no chunk has a file")
            for opened in [store, try FileChunkStore(root: root)] {
                for (account, hash, bytes) in written {
                    #expect(try await readAll(hash, of: account, from: opened, pieceSize: 4096) == bytes)
                    #expect(try await opened.contains(hash, of: account))
                    let other = account == ada ? grace : ada
                    if !written.contains(where: { $0.0 == other && $0.1 == hash }) {
                        #expect(try await opened.contains(hash, of: other) == false, "another account's chunk")
                    }
                }
            }
        }
    }

    @Test("A chunk over a mebibyte, or one arriving when the memory budget is spent, is a file of its own")
    func largeAndOverBudget() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileChunkStore(root: directory, memoryBudget: 100_000)
            let ada = AccountID()
            var random = SystemRandomNumberGenerator()
            let large = Self.bytes(3 << 20, &random)
            let first = Self.bytes(60_000, &random)
            let second = Self.bytes(60_000, &random)
            // Both held at once: the second does not fit the budget beside the first.
            let uploads = [try await store.beginUpload(for: ada), try await store.beginUpload(for: ada)]
            try first.withUnsafeBytes { try uploads[0].write($0) }
            try second.withUnsafeBytes { try uploads[1].write($0) }
            #expect(store.unfinishedUploadsInMemory == 1, "the second went to a file")
            let big = try await store.beginUpload(for: ada)
            try large.withUnsafeBytes { try big.write($0) }
            try await store.finish([
                (uploads[0], Fixtures.sha256(first)), (uploads[1], Fixtures.sha256(second)),
                (big, Fixtures.sha256(large)),
            ])
            #expect(try store.packedLocation(of: Fixtures.sha256(first), of: ada) != nil)
            for bytes in [second, large] {
                let hash = Fixtures.sha256(bytes)
                #expect(try store.packedLocation(of: hash, of: ada) == nil)
                #expect(FileManager.default.fileExists(atPath: store.location(of: hash, of: ada).path))
            }
            for bytes in [first, second, large] {
                #expect(try await readAll(Fixtures.sha256(bytes), of: ada, from: store, pieceSize: 1 << 16) == bytes)
            }
            // The budget came back: a chunk of the budget's size is held in memory again.
            let again = Self.bytes(100_000, &random)
            let upload = try await store.beginUpload(for: ada)
            try again.withUnsafeBytes { try upload.write($0) }
            #expect(store.unfinishedUploadsInMemory == 1)
            try await upload.finish(expecting: Fixtures.sha256(again))
            #expect(try store.packedLocation(of: Fixtures.sha256(again), of: ada) != nil)
        }
    }

    @Test("A batch with one wrong chunk stores none of it and leaves nothing behind")
    func wrongChunkInBatch() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileChunkStore(root: directory, memoryBudget: 50_000)
            let ada = AccountID()
            var random = SystemRandomNumberGenerator()
            let parts = (0..<4).map { _ in Self.bytes(30_000, &random) }
            var batch: [(upload: any ChunkUpload, hash: ChunkHash)] = []
            for (index, bytes) in parts.enumerated() {
                let upload = try await store.beginUpload(for: ada)
                try bytes.withUnsafeBytes { try upload.write($0) }
                batch.append((upload, Fixtures.sha256(index == 2 ? [1, 2, 3] : bytes)))
            }
            await expectError(.chunkHashMismatch) { try await store.finish(batch) }
            for bytes in parts { #expect(try await store.contains(Fixtures.sha256(bytes), of: ada) == false) }
            #expect(store.unfinishedUploadsInMemory == 0)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("incoming").path)
                    .isEmpty)
        }
    }
}
