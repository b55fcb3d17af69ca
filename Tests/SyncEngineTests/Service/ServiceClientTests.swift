import Crypto
import Foundation
import NIOCore
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Service client and push client against a live service")
struct ServiceClientTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    @Test(
        "Upload, create, move, download, feed and key-value through the client; refusals arrive as the service's errors"
    )
    func roundTrip() async throws {
        let service = try await LocalService.start()
        do {
            let laptop = try await service.signIn(account: "ada", device: "laptop")
            let desktop = try await service.signIn(account: "ada", device: "desktop")
            let content = ByteBuffer(string: "milk, eggs")
            let hash = try ChunkHash(digest: SHA256.hash(data: content.readableBytesView))
            let chunk = ChunkReference(hash: hash, size: Int64(content.readableBytes))
            #expect(try await laptop.missingChunks([chunk], in: Self.container) == [hash])
            try await laptop.uploadChunk(content, hash: hash, in: Self.container)
            #expect(try await laptop.missingChunks([chunk], in: Self.container).isEmpty)

            let id = ItemID()
            let first = VersionRecord(
                id: VersionID(), itemID: id, manifest: .file([chunk]), contentHash: hash, modificationDate: Date(),
                savingDevice: SavingDevice(id: DeviceID(), name: "laptop"))
            let created = try await laptop.createItem(
                CreateItemRequest(id: id, path: try ItemPath("Documents/List.txt"), kind: .file, version: first),
                in: Self.container)
            #expect(created.outcome == .current)

            var downloaded: [UInt8] = []
            try await desktop.downloadChunk(hash, in: Self.container) { downloaded += Array($0.readableBytesView) }
            #expect(downloaded == Array("milk, eggs".utf8))
            let page = try await desktop.changes(in: Self.container, since: nil, limit: 2)
            #expect(page.changes.count == 2)
            #expect(page.hasMore)

            // A stale delete comes back as the service's own error, with its code and the current version.
            let moved = try await desktop.moveItem(id, to: try ItemPath("Documents/Groceries.txt"), in: Self.container)
            #expect(moved.item.path.string == "Documents/Groceries.txt")
            await #expect {
                try await desktop.deleteItem(id, basedOn: VersionID(), in: Self.container)
            } throws: { error in
                (error as? ProtocolError)?.code == .staleDelete
                    && (error as? ProtocolError)?.currentVersion == first.id
            }
            let batch = KeyValueBatch(writes: [KeyValueWrite(key: "sort", value: .string("name"), timestamp: Date())])
            _ = try await laptop.apply(batch, in: Self.container)
            #expect(try await desktop.keyValues(in: Self.container, since: nil).entries.map(\.key) == ["sort"])
        } catch {
            await service.remove()
            throw error
        }
        await service.remove()
    }

    @Test("A service that cannot be reached reads the same from every route: unreachable, at its address, and why")
    func unreachableFromEveryRoute() async throws {
        let (socket, port) = try Loopback.refusingPort()
        defer { close(socket) }
        let address = "http://127.0.0.1:\(port)"
        let client = ServiceClient(baseURL: address, token: "a token", timeout: .seconds(10))
        let content = ByteBuffer(string: "milk, eggs")
        let hash = try ChunkHash(digest: SHA256.hash(data: content.readableBytesView))
        let chunk = ChunkReference(hash: hash, size: Int64(content.readableBytes))
        let container = Self.container
        let routes: [(String, () async throws -> Void)] = [
            ("missing chunks", { _ = try await client.missingChunks([chunk], in: container) }),
            ("one chunk up", { try await client.uploadChunk(content, hash: hash, in: container) }),
            ("chunks up", { try await client.uploadChunks([(hash, content)], in: container) }),
            ("chunks down", { _ = try await client.downloadChunks([chunk], in: container) }),
            ("one chunk down", { try await client.downloadChunk(hash, in: container) { _ in } }),
            ("feed", { _ = try await client.changes(in: container, since: nil) }),
            ("key-value store", { _ = try await client.keyValues(in: container, since: nil) }),
            ("item", { _ = try await client.item(ItemID(), in: container) }),
        ]
        for (route, request) in routes {
            do {
                try await request()
                Issue.record("\(route): answered")
            } catch let error as ServiceUnreachableError {
                #expect(error.description == "cannot reach the service at \(address): connection refused", "\(route)")
            } catch {
                Issue.record("\(route): \(error)")
            }
        }
    }

    @Test("The push client connects, hears another device's commit, and reconnects after the service restarts")
    func pushReconnects() async throws {
        let service = try await LocalService.start()
        let laptop = try await service.signIn(account: "ada", device: "laptop")
        let desktop = try await service.signIn(account: "ada", device: "desktop")
        var push = PushClient(
            baseURL: service.baseURL, token: try #require(desktop.token), containers: [Self.container])
        push.initialBackoff = .milliseconds(50)
        let events = push.events()
        var iterator = events.makeAsyncIterator()
        var restarted: LocalService?
        do {
            #expect(try await next(&iterator) { if case .connected = $0 { true } else { false } })
            let created = try await laptop.createItem(
                CreateItemRequest(path: try ItemPath("Documents/Folder"), kind: .directory), in: Self.container)
            let heard = try await next(&iterator) {
                if case .message(.changed(_, let token)) = $0 { token == created.token } else { false }
            }
            #expect(heard, "the commit's position was pushed")

            await service.stop()
            #expect(try await next(&iterator) { if case .disconnected = $0 { true } else { false } })
            restarted = try await LocalService.start(in: service.directory, port: service.port)
            #expect(try await next(&iterator) { if case .connected = $0 { true } else { false } }, "reconnected")
        } catch {
            await (restarted ?? service).remove()
            throw error
        }
        await (restarted ?? service).remove()
    }

    /// Waits (at most 30 s, a guard against hanging, not a timing check) for an event matching `matches`.
    private func next(
        _ iterator: inout AsyncStream<PushClient.Event>.Iterator, _ matches: (PushClient.Event) -> Bool
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            guard let event = await iterator.next() else { return false }
            if matches(event) { return true }
        }
        return false
    }
}
