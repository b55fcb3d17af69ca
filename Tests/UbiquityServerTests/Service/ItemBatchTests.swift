import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import UbiquityProtocol
import UbiquityServer

@Suite("Service: items created and committed in batches")
struct ItemBatchTests {
    @Test(
        "A batch creates many items in one request, each answered on its own: refused ones (a path taken, chunks missing, an unknown item) change nothing, the others are stored, in the feed and downloadable"
    )
    func batchAppliesEachOperationOnItsOwn() async throws {
        try await TestServer.make().test(.live) { client in
            let ada = try await Device.signIn(client, account: "ada", device: "laptop")
            var operations: [ItemBatchOperation] = []
            var contents: [ItemID: [UInt8]] = [:]
            for index in 0..<40 {
                let id = ItemID()
                let content = Array("item \(index) of the batch".utf8)
                contents[id] = content
                operations.append(
                    .create(
                        CreateItemRequest(
                            id: id, path: try ItemPath("Documents/Batch/\(index).txt"), kind: .file,
                            version: try await ada.prepareVersion(of: id, content))))
            }
            // Refused: another item at a path the batch has just taken, a version whose chunk was never uploaded,
            // and a version of an item that does not exist.
            let taken = ItemID()
            operations.insert(
                .create(
                    CreateItemRequest(
                        id: taken, path: try ItemPath("Documents/Batch/3.txt"), kind: .file,
                        version: try await ada.prepareVersion(of: taken, Array("taken".utf8)))), at: 10)
            let lacking = ItemID()
            let missing = try Device.hash(Array("never uploaded".utf8))
            operations.insert(
                .create(
                    CreateItemRequest(
                        id: lacking, path: try ItemPath("Documents/Batch/lacking.txt"), kind: .file,
                        version: VersionRecord(
                            id: VersionID(), itemID: lacking,
                            manifest: .file([ChunkReference(hash: missing, size: 14)]),
                            contentHash: missing, modificationDate: Date(), savingDevice: ada.info.device,
                            basedOn: nil))), at: 20)
            var stray = try await ada.prepareVersion(of: ItemID(), Array("stray".utf8))
            stray.basedOn = nil
            operations.append(.commit(stray))

            let answer = try await ada.send(.post, ada.path("batch"), json: ItemBatchRequest(operations: operations))
            #expect(answer.status == .ok, "\(answer.text)")
            let response = try answer.decode(ItemBatchResponse.self)
            try #require(response.results.count == operations.count)
            #expect(response.results[10].error?.code == .pathCollision)
            #expect(response.results[20].error?.code == .chunksMissing)
            #expect(response.results[20].error?.missingChunks == [missing])
            #expect(response.results.last?.error?.code == .itemNotFound)
            let applied = response.results.compactMap(\.response)
            #expect(applied.count == 40)
            #expect(applied.allSatisfy { $0.outcome == .current })
            #expect(response.token == applied.last?.token)

            // What the batch stored is what 40 single requests would have: the items, their feed entries, their
            // content; nothing of the refused ones.
            let list = try await ada.send(.get, ada.path("items")).decode(ItemListResponse.self)
            #expect(Set(list.items.map(\.id)) == Set(contents.keys))
            #expect(list.token == response.token)
            let created = try await ada.allChanges().compactMap { change -> ItemID? in
                if case .itemCreated(let id, _, _) = change { return id }
                return nil
            }
            #expect(Set(created) == Set(contents.keys))
            #expect(created.count == 40)
            for result in applied {
                let version = try #require(result.version)
                #expect(try await ada.download(version) == contents[result.item.id])
                #expect(version.savingDevice == ada.info.device)
            }
        }
    }

    @Test("A create and a commit of the same item in one batch apply in order; a retried batch changes nothing more")
    func operationsApplyInOrder() async throws {
        try await TestServer.make().test(.live) { client in
            let ada = try await Device.signIn(client, account: "ada", device: "laptop")
            let id = ItemID()
            let first = try await ada.prepareVersion(of: id, Array("first".utf8))
            let second = try await ada.prepareVersion(of: id, Array("second".utf8), basedOn: first.id)
            let request = ItemBatchRequest(operations: [
                .create(
                    CreateItemRequest(id: id, path: try ItemPath("Documents/Ordered.txt"), kind: .file, version: first)),
                .commit(second),
            ])
            let response = try await ada.send(.post, ada.path("batch"), json: request).decode(ItemBatchResponse.self)
            #expect(response.results.map(\.response?.outcome) == [.current, .current])
            #expect(response.results.last?.response?.item.currentVersion == second.id)

            // The same batch again, as a device does after losing the answer: the item exists at that path and the
            // versions are there, so nothing new is stored and the feed does not move.
            let again = try await ada.send(.post, ada.path("batch"), json: request).decode(ItemBatchResponse.self)
            #expect(again.results.allSatisfy { $0.response != nil || $0.error?.code == .versionExists })
            let detail = try await ada.send(.get, ada.path("items/\(id)")).decode(ItemDetail.self)
            #expect(detail.item.currentVersion == second.id)
            #expect(detail.versions.count == 2)
        }
    }

    @Test(
        "An empty batch, one over 1,000 operations and an operation that is neither a create nor a commit are refused whole"
    )
    func malformedBatchesAreRefused() async throws {
        try await TestServer.make().test(.live) { client in
            let ada = try await Device.signIn(client, account: "ada", device: "laptop")
            let empty = try await ada.send(.post, ada.path("batch"), json: ItemBatchRequest(operations: []))
            #expect(empty.status == .badRequest)
            #expect(empty.error?.code == .malformedRequest)

            let directory = ItemBatchOperation.create(
                CreateItemRequest(path: try ItemPath("Documents/Folder"), kind: .directory))
            let tooMany = ItemBatchRequest(
                operations: Array(repeating: directory, count: ItemBatchRequest.maximumOperations + 1))
            let over = try await ada.send(.post, ada.path("batch"), json: tooMany)
            #expect(over.status == .badRequest)
            #expect(over.error?.code == .malformedRequest)

            let unknown = try await ada.send(
                .post, ada.path("batch"), body: ByteBuffer(string: #"{"operations": [{"delete": {"id": "x"}}]}"#))
            #expect(unknown.status == .badRequest)
            #expect(unknown.error?.code == .malformedRequest)

            let list = try await ada.send(.get, ada.path("items")).decode(ItemListResponse.self)
            #expect(list.items.isEmpty, "a refused batch stored something")
        }
    }
}
