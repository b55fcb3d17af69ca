import Foundation
import Testing
import UbiquityProtocol
import UbiquityServer

extension StorageContractTests {
    @Test(
        "item batches: applied in order, each as its single operation would be; a refused one changes nothing and the rest apply",
        arguments: StorageDriverKind.available)
    func itemBatches(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let milk = ItemID()
            let bread = ItemID()
            let first = try await scene.uploadedContent()
            let second = try await scene.uploadedContent()
            let crumbs = try await scene.uploadedContent()
            let firstVersion = scene.version(of: milk, first, at: 1, basedOn: nil)
            let secondVersion = scene.version(of: milk, second, at: 2, basedOn: firstVersion.id)
            let never = Content.random()
            let neverID = ItemID()
            let operations: [ItemBatchOperation] = [
                .create(
                    CreateItemRequest(
                        id: milk, path: try ItemPath("Documents/Milk.txt"), kind: .file, version: firstVersion)),
                // Refused: its chunks were never uploaded.
                .create(
                    CreateItemRequest(
                        id: neverID, path: try ItemPath("Documents/Never.txt"), kind: .file,
                        version: scene.version(of: neverID, never, at: 1, basedOn: nil))),
                .commit(secondVersion),
                // Refused: the path is the first item's.
                .create(CreateItemRequest(id: bread, path: try ItemPath("Documents/Milk.txt"), kind: .file)),
                .create(
                    CreateItemRequest(
                        id: bread, path: try ItemPath("Documents/Bread.txt"), kind: .file,
                        version: scene.version(of: bread, crumbs, at: 3, basedOn: nil))),
            ]
            let results = try await scene.metadata.applyItemBatch(operations, in: scene.container)
            try #require(results.count == operations.count)
            #expect((try? results[0].get())?.outcome == .current)
            #expect(results[1].refusal?.code == .chunksMissing)
            #expect((try? results[2].get())?.item.currentVersion == secondVersion.id, "a commit after its create")
            #expect(results[3].refusal?.code == .pathCollision)
            #expect((try? results[4].get())?.outcome == .current)

            // The same store as the operations that applied, one request each, would have made.
            let single = try await driver.withStores { other -> ContainerSnapshot in
                let twin = try await StorageScene.make(other)
                try await twin.upload(first.chunks + second.chunks + crumbs.chunks)
                for (index, operation) in operations.enumerated() where (try? results[index].get()) != nil {
                    switch operation {
                    case .create(let request): _ = try await twin.metadata.createItem(request, in: twin.container)
                    case .commit(let version): _ = try await twin.metadata.commit(version, in: twin.container)
                    }
                }
                return try await twin.snapshot()
            }
            let batched = try await scene.snapshot()
            #expect(batched.list.items.map(\.path) == single.list.items.map(\.path))
            #expect(batched.details.map(\.versions) == single.details.map(\.versions))
            #expect(batched.changes.count == single.changes.count)
            #expect(try await scene.metadata.items(in: scene.container).token == (try? results[4].get())?.token)
        }
    }
}

extension Result {
    /// The error of a failure.
    fileprivate var refusal: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
