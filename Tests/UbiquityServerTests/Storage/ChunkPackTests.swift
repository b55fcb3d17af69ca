import Foundation
import GRDB
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

    @Test(
        "An index that lost its latest entries, as after a power loss, finds them again in the packs; a damaged or torn record is skipped"
    )
    func indexRebuiltFromPacks() async throws {
        try await withTemporaryDirectory { directory in
            let root = directory.appendingPathComponent("chunks", isDirectory: true)
            let packs = root.appendingPathComponent("packs", isDirectory: true)
            let ada = AccountID()
            let grace = AccountID()
            var random = SystemRandomNumberGenerator()
            var written: [(AccountID, ChunkHash, [UInt8])] = []
            var damaged: (hash: ChunkHash, pack: URL, offset: Int64)?
            do {
                // Packs of 64 KiB: the batches fill several (48 chunks of at least 5,000 bytes fill at least four
                // whatever the sizes drawn), and the filled ones are sealed.
                let store = try FileChunkStore(root: root, packBytes: 64 << 10)
                for _ in 0..<8 {
                    var batch: [(upload: any ChunkUpload, hash: ChunkHash)] = []
                    for index in 0..<6 {
                        let account = index % 2 == 0 ? ada : grace
                        let bytes = Self.bytes(Int.random(in: 5_000...9_000, using: &random), &random)
                        let upload = try await store.beginUpload(for: account)
                        try bytes.withUnsafeBytes { try upload.write($0) }
                        batch.append((upload, Fixtures.sha256(bytes)))
                        written.append((account, Fixtures.sha256(bytes), bytes))
                    }
                    try await store.finish(batch)
                }
                let middle = written[20]
                let location = try #require(try store.packedLocation(of: middle.1, of: middle.0))
                damaged = (middle.1, location.pack, location.offset)
            }
            let packFiles = Self.files(under: packs).filter { $0.hasSuffix(".pack") }
            #expect(packFiles.count >= 4, "\(packFiles)")
            let index = try DatabaseQueue(path: packs.appendingPathComponent("index.sqlite").path)
            let sealedBefore = try await index.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sealed_pack")
            }
            #expect(sealedBefore == packFiles.count - 1, "every pack but the one being filled is sealed")
            // The index loses every other entry and every seal; one lost chunk's bytes are damaged, and the newest pack
            // ends in a torn record (a header whose bytes never came).
            let spoiled = try #require(damaged)
            let lost = written.enumerated().filter { $0.offset % 2 == 0 || $0.element.1 == spoiled.hash }.map {
                [$0.element.0.string, $0.element.1.string]
            }
            try await index.write { db in
                for entry in lost {
                    try db.execute(
                        sql: "DELETE FROM chunk WHERE account = ? AND hash = ?", arguments: StatementArguments(entry))
                }
                try db.execute(sql: "DELETE FROM sealed_pack")
            }
            try index.close()
            let damage = try FileHandle(forUpdating: spoiled.pack)
            try damage.seek(toOffset: UInt64(spoiled.offset + 1))
            try damage.write(contentsOf: Data([0xFF, 0x00, 0xFF]))
            try damage.close()
            let newest = packs.appendingPathComponent(
                "\(packFiles.compactMap { Int($0.dropLast(5)) }.max()!).pack")
            let torn = try FileHandle(forUpdating: newest)
            try torn.seekToEnd()
            try torn.write(contentsOf: Data("ubqchnk1".utf8) + Data(count: 48) + Data([0x10, 0x27]) + Data(count: 6))
            try torn.write(contentsOf: Data(count: 100))
            try torn.close()

            let reopened = try FileChunkStore(root: root, packBytes: 64 << 10)
            for (account, hash, bytes) in written {
                if hash == spoiled.hash {
                    #expect(try await reopened.contains(hash, of: account) == false, "damaged bytes are not indexed")
                } else {
                    #expect(try await readAll(hash, of: account, from: reopened, pieceSize: 4096) == bytes)
                }
            }
            let sealedAfter = try await DatabaseQueue(path: packs.appendingPathComponent("index.sqlite").path).read {
                db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sealed_pack")
            }
            #expect(sealedAfter == packFiles.count, "every pack read again is sealed")
        }
    }
}
