import Foundation
import Testing
import UbiquityProtocol
import UbiquityServer

extension StorageContractTests {
    /// One operation of the concurrent writers, and how to run it on a store.
    private enum Operation: Sendable {
        case create(CreateItemRequest)
        case move(ItemID, ItemPath)
        case delete(ItemID, basedOn: VersionID?)

        func run(on scene: StorageScene) async throws -> ItemResponse {
            switch self {
            case .create(let request): try await scene.metadata.createItem(request, in: scene.container)
            case .move(let id, let path): try await scene.metadata.moveItem(id, to: path, in: scene.container)
            case .delete(let id, let basedOn):
                try await scene.metadata.deleteItem(id, basedOn: basedOn, in: scene.container)
            }
        }
    }

    @Test(
        "concurrent writers to one container: each answer is its operation's alone in the feed's order, and replaying the accepted ones in that order makes the same store",
        arguments: StorageDriverKind.available)
    func concurrentWriters(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let moverID = ItemID()
            let doomedID = ItemID()
            let keeperID = ItemID()
            let moverContent = try await scene.uploadedContent()
            let doomedContent = try await scene.uploadedContent()
            let moverVersion = scene.version(of: moverID, moverContent, at: 1, basedOn: nil)
            let doomedVersion = scene.version(of: doomedID, doomedContent, at: 1, basedOn: nil)
            let setup: [Operation] = [
                .create(
                    CreateItemRequest(
                        id: moverID, path: try ItemPath("Inbox/Old.txt"), kind: .file, version: moverVersion)),
                .create(
                    CreateItemRequest(
                        id: doomedID, path: try ItemPath("Trash/Doomed.txt"), kind: .file, version: doomedVersion)),
                .create(CreateItemRequest(id: keeperID, path: try ItemPath("Keep/Keeper.txt"), kind: .file)),
                .create(CreateItemRequest(id: ItemID(), path: try ItemPath("Blocked/Here.txt"), kind: .file)),
            ]
            for operation in setup { _ = try await operation.run(on: scene) }

            var uploaded = [moverContent, doomedContent]
            var operations: [Operation] = []
            func file(_ path: String, content: Content) throws -> Operation {
                let id = ItemID()
                return .create(
                    CreateItemRequest(
                        id: id, path: try ItemPath(path), kind: .file,
                        version: scene.version(of: id, content, at: 2, basedOn: nil)))
            }
            for index in 0..<24 {
                let content = try await scene.uploadedContent()
                uploaded.append(content)
                operations.append(try file("Documents/\(index % 4)/Note \(index).txt", content: content))
            }
            for index in 0..<6 {
                for _ in 0..<2 {
                    let content = try await scene.uploadedContent()
                    uploaded.append(content)
                    operations.append(try file("Shared/List \(index).txt", content: content))
                }
            }
            for index in 0..<4 { operations.append(try file("Lost/\(index).txt", content: .random())) }
            operations.append(.move(moverID, try ItemPath("Archive/Old.txt")))
            operations.append(.delete(doomedID, basedOn: doomedVersion.id))
            let takerContent = try await scene.uploadedContent()
            uploaded.append(takerContent)
            operations.append(try file("Inbox/Old.txt", content: takerContent))
            // Refused after the keeper's old place was given up: undoing it must keep that place taken.
            operations.append(.move(keeperID, try ItemPath("Blocked/Here.txt")))
            let tokenBefore = try await scene.metadata.items(in: scene.container).token

            let results = await withTaskGroup(of: (Int, Result<ItemResponse, any Error>).self) { group in
                for (index, operation) in operations.enumerated() {
                    group.addTask {
                        do { return (index, .success(try await operation.run(on: scene))) } catch {
                            return (index, .failure(error))
                        }
                    }
                }
                var results = [Result<ItemResponse, any Error>?](repeating: nil, count: operations.count)
                for await (index, result) in group { results[index] = result }
                return results.map { $0! }
            }

            // Which were refused, and why: every one has a reason its operation alone would have had.
            var accepted: [(index: Int, response: ItemResponse)] = []
            for (index, result) in results.enumerated() {
                switch result {
                case .success(let response): accepted.append((index, response))
                case .failure(let error as ProtocolError):
                    switch index {
                    case 24..<36: #expect(error.code == .pathCollision, "\(error)")
                    case 36..<40: #expect(error.code == .chunksMissing, "\(error)")
                    case 42: #expect(error.code == .pathCollision, "the taker ran before the move: \(error)")
                    case 43: #expect(error.code == .pathCollision, "\(error)")
                    default: Issue.record("operation \(index) refused: \(error)")
                    }
                case .failure(let error): Issue.record("operation \(index) failed: \(error)")
                }
            }
            #expect(accepted.filter { (0..<24).contains($0.index) }.count == 24)
            for pair in 0..<6 {
                let winners = accepted.filter { [24 + 2 * pair, 25 + 2 * pair].contains($0.index) }
                #expect(winners.count == 1, "exactly one of two creates at one path lands")
            }
            #expect(accepted.contains { $0.index == 40 } && accepted.contains { $0.index == 41 })
            #expect(!accepted.contains { $0.index == 43 })

            // The feed holds exactly the accepted operations' changes, each answer's token after its own.
            let sequences = try accepted.map { try sequence(of: $0.response.token) }
            #expect(Set(sequences).count == accepted.count, "every accepted operation has a position of its own")
            let ordered = zip(accepted, sequences).sorted { $0.1 < $1.1 }.map(\.0)
            let feed = try await scene.changes(since: tokenBefore)
            #expect(try sequence(of: feed.token) == sequences.max())
            #expect(feed.changes.count == Int(try sequences.max()! - sequence(of: tokenBefore)))
            let created = Set(
                feed.changes.compactMap { change -> ItemID? in
                    if case .itemCreated(let id, _, _) = change { return id }
                    return nil
                })
            let acceptedCreates = Set(
                accepted.compactMap { entry -> ItemID? in
                    if case .create(let request) = operations[entry.index] { return request.id }
                    return nil
                })
            #expect(created == acceptedCreates)

            // A folder that still holds an item stays; emptied folders are gone: a file may now take their names.
            await expectError(.pathCollision) { try await scene.create("Keep") }
            let (trashID, inboxID) = (ItemID(), ItemID())
            let tookInbox = accepted.contains { $0.index == 42 }
            #expect(try await scene.create("Trash", id: trashID).item.path.string == "Trash")
            if !tookInbox { #expect(try await scene.create("Inbox", id: inboxID).item.path.string == "Inbox") }

            // Replayed one at a time in the feed's order, the accepted operations make the same store.
            let concurrent = try await scene.snapshot()
            let replayed = try await driver.withStores { other -> ContainerSnapshot in
                let twin = try await StorageScene.make(other)
                try await twin.upload(uploaded.flatMap(\.chunks))
                for operation in setup { _ = try await operation.run(on: twin) }
                for entry in ordered { _ = try await operations[entry.index].run(on: twin) }
                try await twin.create("Trash", id: trashID)
                if !tookInbox { try await twin.create("Inbox", id: inboxID) }
                return try await twin.snapshot()
            }
            #expect(concurrent.list.items.map(\.path) == replayed.list.items.map(\.path))
            #expect(concurrent.list.items.map(\.id) == replayed.list.items.map(\.id))
            #expect(concurrent.details.map(\.versions) == replayed.details.map(\.versions))
            #expect(concurrent.changes == replayed.changes)
        }
    }
}

/// The feed position a token names (its last part).
private func sequence(of token: ChangeToken) throws -> Int64 {
    try #require(token.string.split(separator: ".").last.flatMap { Int64($0) }, "\(token) names no position")
}
