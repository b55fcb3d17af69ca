import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import UbiquityProtocol
import UbiquityServer

@Suite("Service: chunks uploaded in batches")
struct ChunkBatchTests {
    @Test(
        "A batch stores every chunk it holds (each downloadable, counted once), and a batch of chunks already stored changes nothing"
    )
    func batchStoresEveryChunk() async throws {
        try await TestServer.make().test(.live) { client in
            let ada = try await Device.signIn(client, account: "ada", device: "laptop")
            let pieces = (0..<5).map { index in
                (0..<(1000 + index * 333)).map { UInt8(truncatingIfNeeded: $0 &* (index + 7)) }
            }
            let references = try pieces.map { ChunkReference(hash: try Device.hash($0), size: Int64($0.count)) }
            var body = ByteBuffer()
            for (reference, piece) in zip(references, pieces) {
                body.writeBytes(ChunkBatch.header(reference.hash, size: piece.count) + piece)
            }
            let answer = try await ada.send(.post, ada.path("chunks"), body: body)
            #expect(try answer.decode(ChunkBatchResponse.self).received == 5)
            let missing = try await ada.send(
                .post, ada.path("chunks/missing"), json: MissingChunksRequest(chunks: references)
            ).decode(MissingChunksResponse.self)
            #expect(missing.missing.isEmpty)
            for (reference, piece) in zip(references, pieces) {
                let download = try await ada.send(.get, ada.path("chunks/\(reference.hash)"))
                #expect(download.status == .ok)
                #expect(Array(download.body) == piece)
            }
            let used = try await ada.send(.get, "/v1/account").decode(AccountInfo.self).usedBytes
            #expect(used == pieces.reduce(0) { $0 + Int64($1.count) })

            let again = try await ada.send(.post, ada.path("chunks"), body: body)
            #expect(try again.decode(ChunkBatchResponse.self).received == 5)
            #expect(try await ada.send(.get, "/v1/account").decode(AccountInfo.self).usedBytes == used)
        }
    }
}
