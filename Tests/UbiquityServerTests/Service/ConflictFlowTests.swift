import Foundation
import HummingbirdTesting
import Testing
import UbiquityProtocol
import UbiquityServer

/// Two devices of one account working on the same items through the service's routes.
@Suite("Service: versions and conflicts between devices")
struct ConflictFlowTests {
    @Test(
        "Concurrent edits from one base: one current and one conflict version, the same for both; resolution reaches the other"
    )
    func concurrentEditsMakeOneConflictAndResolutionPropagates() async throws {
        try await TestServer.make().test { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "Ada's laptop")
            let desktop = try await Device.signIn(client, account: "ada", device: "Ada's desktop")
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            let created = try await laptop.create("Documents/List.txt", "milk".bytes, modified: start)
            let item = created.item.id
            let base = try #require(created.item.currentVersion)

            let fromLaptop = try await laptop.commit(item, "milk, eggs".bytes, basedOn: base, modified: start + 10)
            #expect(fromLaptop.outcome == .current)
            let fromDesktop = try await desktop.commit(item, "milk, bread".bytes, basedOn: base, modified: start + 20)
            // The desktop's edit is later, so it wins; the laptop's is kept as a conflict version.
            #expect(fromDesktop.outcome == .current)
            let laptopVersion = try #require(fromLaptop.version)
            let desktopVersion = try #require(fromDesktop.version)
            #expect(desktopVersion.savingDevice.name == "Ada's desktop", "the service names the saving device")

            let seenByLaptop = try await laptop.send(.get, laptop.path("items/\(item)")).decode(ItemDetail.self)
            let seenByDesktop = try await desktop.send(.get, desktop.path("items/\(item)")).decode(ItemDetail.self)
            #expect(seenByLaptop == seenByDesktop)
            #expect(seenByLaptop.item.currentVersion == desktopVersion.id)
            let conflicts = seenByLaptop.versions.filter { $0.isConflict && !$0.isResolved }
            #expect(conflicts.map(\.id) == [laptopVersion.id])
            #expect(try await laptop.download(conflicts[0]) == "milk, eggs".bytes, "the losing edit is kept whole")
            let laptopFeed = try await laptop.allChanges(limit: 2)
            #expect(laptopFeed == (try await desktop.allChanges()), "both read the same feed")
            let desktopToken = try await desktop.send(.get, desktop.path("changes")).decode(ChangePage.self).nextToken

            // The laptop resolves as the seeds do: its version wins (replace), mark resolved, remove the others.
            _ = try await laptop.send(
                .post, laptop.path("items/\(item)/current"), json: ReplaceCurrentRequest(versionID: laptopVersion.id)
            )
            .decode(ItemResponse.self)
            let others = try await laptop.send(.get, laptop.path("items/\(item)/versions")).decode([VersionRecord].self)
                .filter { $0.id != laptopVersion.id }
            for version in others where version.isConflict && !version.isResolved {
                _ = try await laptop.send(.post, laptop.path("items/\(item)/versions/\(version.id)/resolve"))
                    .decode(ItemResponse.self)
            }
            for version in others {
                _ = try await laptop.send(.delete, laptop.path("items/\(item)/versions/\(version.id)"))
                    .decode(ItemResponse.self)
            }

            let news = try await desktop.send(.get, desktop.path("changes?since=\(desktopToken)")).decode(
                ChangePage.self)
            #expect(news.changes.contains(.itemChanged(itemID: item, currentVersion: laptopVersion.id)))
            #expect(news.changes.contains(.versionRemoved(itemID: item, versionID: desktopVersion.id)))
            let resolved = try await desktop.send(.get, desktop.path("items/\(item)")).decode(ItemDetail.self)
            #expect(resolved.item.currentVersion == laptopVersion.id)
            #expect(resolved.versions.map(\.id) == [laptopVersion.id])
            #expect(try await desktop.download(resolved.versions[0]) == "milk, eggs".bytes)
        }
    }

    @Test("The same content saved on two devices from one base is not a conflict")
    func identicalContentIsNoConflict() async throws {
        try await TestServer.make().test { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            let desktop = try await Device.signIn(client, account: "ada", device: "desktop")
            let created = try await laptop.create("Documents/Same.txt", "v1".bytes)
            let base = created.item.currentVersion
            let first = try await laptop.commit(created.item.id, "v2".bytes, basedOn: base)
            let second = try await desktop.commit(created.item.id, "v2".bytes, basedOn: base)
            #expect(first.outcome == .current)
            #expect(second.outcome == .identical)
            #expect(second.version?.id == first.version?.id)
            let detail = try await desktop.send(.get, desktop.path("items/\(created.item.id)")).decode(ItemDetail.self)
            #expect(!detail.versions.contains { $0.isConflict })
            #expect(detail.item.currentVersion == first.version?.id)
        }
    }

    @Test("A delete based on a stale version is refused with the current version, and nothing changes")
    func staleDeleteIsRefused() async throws {
        try await TestServer.make().test { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            let desktop = try await Device.signIn(client, account: "ada", device: "desktop")
            let created = try await laptop.create("Documents/Note.txt", "one".bytes)
            let stale = try #require(created.item.currentVersion)
            let edited = try await laptop.commit(created.item.id, "two".bytes, basedOn: stale)
            let feedBefore = try await desktop.allChanges()

            let refused = try await desktop.send(.delete, desktop.path("items/\(created.item.id)?basedOn=\(stale)"))
            #expect(refused.status == .conflict)
            #expect(refused.error?.code == .staleDelete)
            #expect(refused.error?.currentVersion == edited.version?.id)
            let detail = try await desktop.send(.get, desktop.path("items/\(created.item.id)")).decode(ItemDetail.self)
            #expect(!detail.item.isDeleted)
            #expect(try await desktop.allChanges() == feedBefore)

            let current = try #require(edited.version?.id)
            let deleted = try await desktop.send(.delete, desktop.path("items/\(created.item.id)?basedOn=\(current)"))
                .decode(ItemResponse.self)
            #expect(deleted.item.isDeleted)
        }
    }

    @Test("A rename keeps the item's id and versions and uploads nothing")
    func renameIsMetadataOnly() async throws {
        let server = try await TestServer.make()
        try await server.test { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            let desktop = try await Device.signIn(client, account: "ada", device: "desktop")
            let content = [UInt8]((0..<20_000).map { UInt8($0 % 251) })
            let created = try await laptop.create("Documents/Draft.txt", content)
            let token = try await desktop.send(.get, desktop.path("changes")).decode(ChangePage.self).nextToken
            let bytesIn = chunkBytesIn(server.service)

            let moved = try await laptop.send(
                .patch, laptop.path("items/\(created.item.id)"),
                json: MoveItemRequest(path: try ItemPath("Documents/Trips/Final.txt"))
            ).decode(ItemResponse.self)
            #expect(moved.item.id == created.item.id)
            #expect(moved.item.path.string == "Documents/Trips/Final.txt")
            #expect(moved.item.currentVersion == created.item.currentVersion)
            #expect(chunkBytesIn(server.service) == bytesIn, "a rename uploads no content")
            let news = try await desktop.send(.get, desktop.path("changes?since=\(token)")).decode(ChangePage.self)
            #expect(
                news.changes == [
                    .itemMoved(
                        itemID: created.item.id, from: try ItemPath("Documents/Draft.txt"),
                        to: try ItemPath("Documents/Trips/Final.txt"))
                ])
            let version = try #require(created.version)
            let detail = try await desktop.send(.get, desktop.path("items/\(created.item.id)")).decode(ItemDetail.self)
            #expect(try await desktop.download(detail.versions[0]) == content)
            #expect(detail.versions == [version])
        }
    }

    private func chunkBytesIn(_ service: UbiquityService) -> Int {
        let line = service.metrics.exposition().split(separator: "\n").first {
            $0.hasPrefix("ubiquity_chunk_bytes_in_total ")
        }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }
}
