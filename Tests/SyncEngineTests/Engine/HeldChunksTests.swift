import Crypto
import Foundation
import Testing
import UbiquityProtocol

@testable import SyncEngine

@Suite("The chunks a feed page carried")
struct HeldChunksTests {
    static func chunk(_ text: String) throws -> InlineChunk {
        let data = Data(text.utf8)
        return InlineChunk(hash: try ChunkHash(digest: SHA256.hash(data: data)), data: data)
    }

    @Test("Only bytes that are their hash's are held, and the next page's chunks replace the last page's")
    func holdsOnlyRightBytesOfTheLastPage() throws {
        let held = HeldChunks()
        let right = try Self.chunk("eggs, flour")
        let spoiled = InlineChunk(hash: try Self.chunk("what was hashed").hash, data: Data("what came".utf8))
        held.replace(with: [right, spoiled])
        #expect(held.bytes(of: right.hash) == right.data)
        #expect(held.bytes(of: spoiled.hash) == nil, "bytes that are not their hash's are downloaded instead")

        let next = try Self.chunk("milk")
        held.replace(with: [next])
        #expect(held.bytes(of: next.hash) == next.data)
        #expect(held.bytes(of: right.hash) == nil, "a page's chunks are kept only until the next page")
    }
}
