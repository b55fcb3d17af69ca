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
    /// A version of `item` holding `content` in one chunk, to go with the chunk's bytes in the batch itself (nothing
    /// uploaded first).
    static func version(of item: ItemID, _ content: [UInt8], device: Device, basedOn: VersionID? = nil) throws
        -> (VersionRecord, InlineChunk)
    {
        let hash = try Device.hash(content)
        let version = VersionRecord(
            id: VersionID(), itemID: item, manifest: .file([ChunkReference(hash: hash, size: Int64(content.count))]),
            contentHash: hash, modificationDate: Date(), savingDevice: device.info.device, basedOn: basedOn)
        return (version, InlineChunk(hash: hash, data: Data(content)))
    }

    @Test(
        "A batch that brings its chunks stores them and applies its operations in one request; a chunk whose bytes are wrong refuses only the operations naming it, and is not stored",
        arguments: ServiceStorage.available)
    func batchBringsItsChunks(storage: ServiceStorage) async throws {
        let server = try await TestServer.make(storage: storage)
        try await server.test(.live) { client in
            let ada = try await Device.signIn(client, account: "ada", device: "laptop")
            var operations: [ItemBatchOperation] = []
            var chunks: [InlineChunk] = []
            var contents: [ItemID: [UInt8]] = [:]
            for index in 0..<20 {
                let id = ItemID()
                let content = Array("small file \(index), its bytes in the request".utf8)
                let (version, chunk) = try Self.version(of: id, content, device: ada)
                contents[id] = content
                chunks.append(chunk)
                operations.append(
                    .create(
                        CreateItemRequest(
                            id: id, path: try ItemPath("Documents/Inline/\(index).txt"), kind: .file,
                            version: version)))
            }
            // An edit of the first item in the same batch, its new chunk brought too, and a second file with the
            // same content as the third (its chunk brought twice, stored once).
            let edited = Array("the first file, edited".utf8)
            let (edit, editChunk) = try Self.version(
                of: operations[0].namedItem, edited, device: ada, basedOn: operations[0].namedVersion)
            operations.append(.commit(edit))
            chunks.append(editChunk)
            contents[edit.itemID] = edited
            let twin = ItemID()
            let (twinVersion, twinChunk) = try Self.version(of: twin, contents[operations[2].namedItem]!, device: ada)
            operations.append(
                .create(
                    CreateItemRequest(
                        id: twin, path: try ItemPath("Documents/Inline/twin.txt"), kind: .file,
                        version: twinVersion)))
            chunks.append(twinChunk)
            contents[twin] = contents[operations[2].namedItem]
            // A chunk whose bytes are not its hash's: the file naming it is refused, alone.
            let spoiled = ItemID()
            let (spoiledVersion, spoiledChunk) = try Self.version(
                of: spoiled, Array("what was hashed".utf8), device: ada)
            operations.insert(
                .create(
                    CreateItemRequest(
                        id: spoiled, path: try ItemPath("Documents/Inline/spoiled.txt"), kind: .file,
                        version: spoiledVersion)), at: 7)
            chunks.append(InlineChunk(hash: spoiledChunk.hash, data: Data("what was sent".utf8)))
            // A chunk no operation names is not looked at, and not stored.
            let strayBytes = Data("named by nothing".utf8)
            let stray = InlineChunk(hash: try Device.hash(strayBytes), data: strayBytes)
            chunks.append(stray)
            let usedBefore = try await ada.send(.get, "/v1/account").decode(AccountInfo.self).usedBytes

            let answer = try await ada.send(
                .post, ada.path("batch"), json: ItemBatchRequest(operations: operations, chunks: chunks))
            #expect(answer.status == .ok, "\(answer.text)")
            let response = try answer.decode(ItemBatchResponse.self)
            try #require(response.results.count == operations.count)
            #expect(response.results[7].error?.code == .chunkHashMismatch)
            let applied = response.results.compactMap(\.response)
            #expect(applied.count == operations.count - 1, "\(response.results.compactMap(\.error))")
            #expect(applied.allSatisfy { $0.outcome == .current })

            // Every applied item reads back with its content; the spoiled one is not there, nor its chunk.
            let list = try await ada.send(.get, ada.path("items")).decode(ItemListResponse.self)
            #expect(Set(list.items.map(\.id)) == Set(contents.keys))
            for (id, content) in contents {
                let detail = try await ada.send(.get, ada.path("items/\(id)")).decode(ItemDetail.self)
                let current = try #require(detail.versions.first { $0.id == detail.item.currentVersion })
                #expect(try await ada.download(current) == content)
            }
            let missing = try await ada.send(
                .post, ada.path("chunks/missing"),
                json: MissingChunksRequest(
                    chunks: spoiledVersion.manifest.chunks + [ChunkReference(hash: stray.hash, size: 16)])
            ).decode(MissingChunksResponse.self)
            #expect(missing.missing == [spoiledChunk.hash, stray.hash])
            // Each distinct right chunk counts once against the quota, the first version's chunk of the edited file
            // included (it stays, as that version is kept).
            var counted = Set<ChunkHash>()
            let expected = chunks.filter {
                $0.hash != spoiledChunk.hash && $0.hash != stray.hash && counted.insert($0.hash).inserted
            }
            .reduce(Int64(0)) { $0 + Int64($1.data.count) }
            let used = try await ada.send(.get, "/v1/account").decode(AccountInfo.self).usedBytes
            #expect(used - usedBefore == expected)
        }
    }

    @Test(
        "A brought chunk the quota has no room for refuses, with the quota's error, only the operations naming it",
        arguments: ServiceStorage.available)
    func broughtChunkOverQuota(storage: ServiceStorage) async throws {
        let server = try await TestServer.make(storage: storage) { $0.defaultQuotaBytes = 3000 }
        try await server.test(.live) { client in
            let ada = try await Device.signIn(client, account: "ada", device: "laptop")
            let fits = ItemID()
            let (fitting, fittingChunk) = try Self.version(of: fits, Array(repeating: 1, count: 2000), device: ada)
            let over = ItemID()
            let (overVersion, overChunk) = try Self.version(of: over, Array(repeating: 2, count: 1500), device: ada)
            let request = ItemBatchRequest(
                operations: [
                    .create(
                        CreateItemRequest(
                            id: fits, path: try ItemPath("Documents/Fits"), kind: .file,
                            version: fitting)),
                    .create(
                        CreateItemRequest(
                            id: over, path: try ItemPath("Documents/Over"), kind: .file,
                            version: overVersion)),
                ], chunks: [fittingChunk, overChunk])
            let response = try await ada.send(.post, ada.path("batch"), json: request).decode(ItemBatchResponse.self)
            #expect(response.results.first?.response?.outcome == .current)
            #expect(response.results.last?.error?.code == .quotaExceeded)
            let list = try await ada.send(.get, ada.path("items")).decode(ItemListResponse.self)
            #expect(list.items.map(\.id) == [fits])
            #expect(try await ada.send(.get, "/v1/account").decode(AccountInfo.self).usedBytes == 2000)
            // The chunk with no room was not stored: the account's disk holds no more than its quota allows.
            let download = try await ada.send(.get, ada.path("chunks/\(overChunk.hash)"))
            #expect(download.status == .notFound)
            #expect(try await ada.send(.get, "/v1/account").decode(AccountInfo.self).usedBytes == 2000)
        }
    }

    @Test(
        "A batch whose brought chunks are not base64, or more than 4 MiB of them, is refused whole and stores nothing")
    func malformedBroughtChunksAreRefused() async throws {
        try await TestServer.make().test(.live) { client in
            let ada = try await Device.signIn(client, account: "ada", device: "laptop")
            let id = ItemID()
            let (version, chunk) = try Self.version(of: id, Array("content".utf8), device: ada)
            let create = ItemBatchOperation.create(
                CreateItemRequest(id: id, path: try ItemPath("Documents/A.txt"), kind: .file, version: version))
            var text = try String(decoding: JSONEncoder().encode(ItemBatchRequest(operations: [create])), as: UTF8.self)
            text.removeLast()
            text += #","chunks":[{"hash":"\#(chunk.hash)","data":"not base64!"}]}"#
            let notBase64 = try await ada.send(.post, ada.path("batch"), body: ByteBuffer(string: text))
            #expect(notBase64.status == .badRequest, "\(notBase64.text)")
            #expect(notBase64.error?.code == .malformedRequest)

            let large = Data(repeating: 7, count: ItemBatchRequest.maximumInlineBytes / 2 + 1)
            let twice = [
                InlineChunk(hash: try Device.hash(large), data: large),
                InlineChunk(hash: try Device.hash(large + [1]), data: large + [1]),
            ]
            let tooMuch = try await ada.send(
                .post, ada.path("batch"), json: ItemBatchRequest(operations: [create], chunks: twice + [chunk]))
            #expect(tooMuch.status == .contentTooLarge, "\(tooMuch.text)")
            #expect(tooMuch.error?.code == .bodyTooLarge)

            let list = try await ada.send(.get, ada.path("items")).decode(ItemListResponse.self)
            #expect(list.items.isEmpty, "a refused batch stored something")
            let missing = try await ada.send(
                .post, ada.path("chunks/missing"), json: MissingChunksRequest(chunks: version.manifest.chunks)
            ).decode(MissingChunksResponse.self)
            #expect(missing.missing == [chunk.hash])
        }
    }
}

extension ItemBatchOperation {
    /// The item a creation makes.
    fileprivate var namedItem: ItemID {
        if case .create(let request) = self { return request.id }
        preconditionFailure("not a creation")
    }

    /// The version a creation brings.
    fileprivate var namedVersion: VersionID? {
        if case .create(let request) = self { return request.version?.id }
        return nil
    }
}
