import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import UbiquityProtocol
import UbiquityServer

@Suite("Service: small edits of large files travel as manifest deltas both ways")
struct ManifestDeltaRouteTests {
    @Test(
        "A commit sent as a delta is stored whole, answered without its version, and read back by another device as a delta against the version it holds; the request and both answers are a fraction of the whole manifests"
    )
    func deltasOnTheWire() async throws {
        try await TestServer.make().test(.live) { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            let desktop = try await Device.signIn(client, account: "ada", device: "desktop")
            // 400 chunks of 64 bytes; the edit changes the 200th.
            var content = (0..<400 * 64).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 64) }
            let id = ItemID()
            let created = try await laptop.send(
                .post, laptop.path("items"),
                json: CreateItemRequest(
                    id: id, path: try ItemPath("Documents/Big.bin"), kind: .file,
                    version: try await laptop.prepareVersion(of: id, content, chunkSize: 64))
            ).decode(ItemResponse.self)
            let first = try #require(created.version)
            content[200 * 64 + 5] ^= 0xFF
            let edit = try await laptop.prepareVersion(
                of: created.item.id, content, basedOn: first.id, chunkSize: 64)
            let payload = VersionPayload(edit, against: first)
            #expect(payload.deltaBase == first.id)

            let whole = try JSONEncoder().encode(edit).count
            let body = try JSONEncoder().encode(payload).count
            #expect(body * 20 < whole, "the delta request is \(body) bytes; the whole version \(whole)")
            let answer = try await laptop.send(.post, laptop.path("items/\(created.item.id)/versions"), json: payload)
            #expect(answer.status == .created, "\(answer.text)")
            let committed = try answer.decode(ItemResponse.self)
            #expect(committed.outcome == .current && committed.version == nil)
            #expect(answer.body.count * 20 < whole, "the answer is \(answer.body.count) bytes")

            // The other device holds the first version: it reads both as deltas, and they come back whole.
            let read = try await desktop.send(.get, desktop.path("items/\(created.item.id)?have=\(first.id)"))
            #expect(read.status == .ok, "\(read.text)")
            #expect(read.body.count * 10 < 2 * whole, "the detail is \(read.body.count) bytes")
            var expected = edit
            expected.savingDevice = laptop.info.device
            expected.modificationDate = WireTimestamp.date(
                microseconds: WireTimestamp.microseconds(of: edit.modificationDate))
            let detail = try read.decode(ItemDetailPayload.self).resolved(have: first)
            #expect(detail.versions == [expected, first])
            let plain = try await desktop.send(.get, desktop.path("items/\(created.item.id)"))
                .decode(ItemDetail.self)
            #expect(plain == detail, "without have= the same detail, every manifest whole")

            // A version the item does not have is no base: the answer is whole, and still reads.
            let unknown = try await desktop.send(.get, desktop.path("items/\(created.item.id)?have=\(VersionID())"))
            #expect(try unknown.decode(ItemDetail.self) == plain)
            let malformed = try await desktop.send(.get, desktop.path("items/\(created.item.id)?have=..%2F"))
            #expect(malformed.error?.code == .invalidIdentifier, "\(malformed.text)")

            // A delta against a version of another item is refused and changes nothing.
            let other = try await laptop.create("Documents/Other.bin", Array("other".utf8))
            var stranger = payload
            stranger.id = VersionID()
            stranger.content = .delta(
                ManifestDelta(base: try #require(other.version?.id), operations: [.copy(from: 0, count: 1)]))
            let refused = try await laptop.send(
                .post, laptop.path("items/\(created.item.id)/versions"), json: stranger)
            #expect(refused.error?.code == .unknownVersion, "\(refused.text)")
            #expect(
                try await laptop.send(.get, laptop.path("items/\(created.item.id)")).decode(ItemDetail.self) == plain)

            // Many items' details in one request, in the order asked, each once; an unknown one left out.
            let asked = ItemDetailsRequest(items: [
                .init(id: id, have: first.id), .init(id: ItemID()), .init(id: other.item.id), .init(id: id),
            ])
            let details = try await desktop.send(.post, desktop.path("items/details"), json: asked)
            #expect(details.status == .ok, "\(details.text)")
            let found = try details.decode(ItemDetailsResponse.self)
            #expect(found.items.map(\.item.id) == [id, other.item.id])
            #expect(try found.items.first?.resolved(have: first) == plain)
            #expect(details.body.count * 10 < 2 * whole, "the details are \(details.body.count) bytes")
            for refused in [
                ItemDetailsRequest(items: []),
                ItemDetailsRequest(items: Array(repeating: .init(id: id), count: ItemDetailsRequest.maximumItems + 1)),
            ] {
                let answer = try await desktop.send(.post, desktop.path("items/details"), json: refused)
                #expect(answer.error?.code == .malformedRequest, "\(answer.text)")
            }
        }
    }
}

@Suite("Service: many chunks downloaded in one request")
struct ChunkFetchRouteTests {
    @Test(
        "A fetch answers the chunks the account has, each once, in the order asked, as a batch whose bytes match their hashes; another account's chunks and unknown ones are left out; an empty or oversized request is refused"
    )
    func fetchesManyChunks() async throws {
        try await TestServer.make().test(.live) { client in
            let ada = try await Device.signIn(client, account: "ada", device: "laptop")
            let bob = try await Device.signIn(client, account: "bob", device: "desktop")
            let pieces = (0..<5).map { index in Array("piece \(index) of the chunk batch".utf8) }
            let hashes = try pieces.map { try Device.hash($0) }
            for (piece, hash) in zip(pieces, hashes) {
                let answer = try await ada.send(.put, ada.path("chunks/\(hash)"), body: ByteBuffer(bytes: piece))
                #expect(answer.status == .created, "\(answer.text)")
            }
            let unknown = try Device.hash(Array("never uploaded".utf8))
            let asked = [hashes[3], unknown, hashes[0], hashes[3], hashes[4]]
            let answer = try await ada.send(.post, ada.path("chunks/fetch"), json: ChunkFetchRequest(hashes: asked))
            #expect(answer.status == .ok, "\(answer.text)")
            var body = ByteBuffer(bytes: answer.body)
            var received: [(ChunkHash, [UInt8])] = []
            while body.readableBytes > 0 {
                let header = body.readBytes(length: ChunkBatch.headerBytes) ?? []
                let (hash, size) = try ChunkBatch.parseHeader(header)
                let bytes = body.readBytes(length: size)
                received.append((hash, try #require(bytes, "the batch ends inside chunk \(hash)")))
            }
            #expect(received.map(\.0) == [hashes[3], hashes[0], hashes[4]])
            for (hash, bytes) in received { #expect(try Device.hash(bytes) == hash) }

            let stranger = try await bob.send(.post, bob.path("chunks/fetch"), json: ChunkFetchRequest(hashes: hashes))
            #expect(stranger.status == .ok && stranger.body.isEmpty, "\(stranger.text)")
            for refused in [
                ChunkFetchRequest(hashes: []),
                ChunkFetchRequest(hashes: Array(repeating: hashes[0], count: ChunkFetchRequest.maximumChunks + 1)),
            ] {
                let answer = try await ada.send(.post, ada.path("chunks/fetch"), json: refused)
                #expect(answer.error?.code == .malformedRequest, "\(answer.text)")
            }
        }
    }
}
