import Foundation
import Testing
import UbiquityProtocol
import UbiquityServer

@Suite("Service: a feed page carries the content of small new files")
struct FeedChunkTests {
    @Test(
        "Asked with chunkBytes, a page carries the chunks of the new small files other devices saved, up to the bytes asked for, each whole file or none; never the asker's own",
        arguments: ServiceStorage.available)
    func pageCarriesOthersSmallFiles(storage: ServiceStorage) async throws {
        try await TestServer.make(storage: storage).test(.live) { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            let desktop = try await Device.signIn(client, account: "ada", device: "desktop")
            var contents: [String: [UInt8]] = [:]
            for index in 0..<3 {
                let content = Array("note \(index), short enough to travel with the news".utf8)
                contents["Documents/Note \(index).txt"] = content
                _ = try await laptop.create("Documents/Note \(index).txt", content)
            }
            // Two chunks of 4 KiB: over the budget below, so carried only when all of it fits.
            let large = (0..<8192).map { UInt8($0 % 253) }
            _ = try await laptop.create("Documents/Large.bin", large)
            let small = contents.values.reduce(0) { $0 + $1.count }

            func page(for device: Device, chunkBytes: Int) async throws -> ChangePage {
                try await device.send(.get, device.path("changes?chunkBytes=\(chunkBytes)")).decode(ChangePage.self)
            }
            // The desktop, with room for the notes and not the large file: the notes' bytes, each as its hash says.
            let carried = try await page(for: desktop, chunkBytes: small + 4096)
            #expect(carried.versions.count == 4)
            var byHash: [ChunkHash: [UInt8]] = [:]
            for chunk in carried.chunks {
                #expect(try Device.hash(chunk.data) == chunk.hash)
                byHash[chunk.hash] = Array(chunk.data)
            }
            #expect(Set(byHash.values) == Set(contents.values), "the notes, and nothing of the large file")
            // With room for everything, the large file's chunks come too; without asking, none.
            let all = try await page(for: desktop, chunkBytes: 1 << 20)
            #expect(all.chunks.reduce(0) { $0 + $1.data.count } == small + large.count)
            #expect(try await page(for: desktop, chunkBytes: 0).chunks.isEmpty)
            let plain = try await desktop.send(.get, desktop.path("changes")).decode(ChangePage.self)
            #expect(plain.chunks.isEmpty && plain.versions.count == 4)
            // The laptop saved them all: it is carried nothing back.
            #expect(try await page(for: laptop, chunkBytes: 1 << 20).chunks.isEmpty)

            for bad in ["-1", "many", "1.5"] {
                let answer = try await desktop.send(.get, desktop.path("changes?chunkBytes=\(bad)"))
                #expect(answer.status == .badRequest, "chunkBytes=\(bad)")
                #expect(answer.error?.code == .malformedRequest)
            }
        }
    }
}
