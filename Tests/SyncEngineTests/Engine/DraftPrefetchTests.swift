import Crypto
import Foundation
import Logging
import NIOCore
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

/// A large file's first version is told to the other devices as a draft while it goes up; a running engine that
/// will download the file fetches the draft's chunks ahead of the commit, and the committed version then needs none.
@Suite("The running engine: a version's draft fetched before its commit")
struct DraftPrefetchTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    @Test(
        "The draft's chunks reach the desktop before the commit; placing the committed version downloads nothing more")
    func draftFetchedAhead() async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-draft-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        var logger = Logger(label: "ubiquity.test.draft")
        logger.logLevel = .critical
        // The laptop is this test, speaking the protocol as an engine uploading a large file does.
        let laptop = try await service.signIn(account: "ada", device: "laptop")
        let client = try await service.signIn(account: "ada", device: "desktop")
        let desktop = try ContainerSync(
            layout: ContainerLayout(root: root.appendingPathComponent("desktop"), container: Self.container),
            client: client, device: SavingDevice(id: DeviceID(), name: "desktop"),
            configuration: .init(eagerDownloadLimit: 64 << 20), logger: logger)
        var engine = ContainerEngine(sync: desktop, pushToken: client.token, logger: logger)
        engine.pollInterval = .seconds(3600)  // no polling: push brings every change
        let running = Task { try await engine.run() }
        defer { running.cancel() }

        // The record goes first: the desktop hears of the item before any content.
        let item = ItemID()
        let path = try ItemPath("Documents/Film.mov")
        var random = SystemRandomNumberGenerator()
        // More chunks than one request asks for: the fetch keeps requests on their way at once and writes in order.
        let pieces = (0..<136).map { _ in (0..<16_384).map { _ in UInt8.random(in: 0...255, using: &random) } }
        // The draft names the chunks in order, one twice, as content may.
        let order = pieces + [pieces[3]]
        let content = order.flatMap { $0 }
        let contentHash = try ChunkHash(digest: SHA256.hash(data: content))
        let size = Int64(content.count)
        // What the desktop tells, in order: it knows the item; the draft's chunks are all here (told as the item's
        // download); the committed version is in place.
        let (milestones, reached) = AsyncStream.makeStream(of: String.self)
        let events = desktop.events()
        let watcher = Task {
            var stage = 0
            for await event in events {
                switch event {
                case .itemChanged(let local) where stage == 0 && local.path == path:
                    stage = 1
                    reached.yield("known")
                case .progress(let id, _, let transfer?) where stage == 1 && id == item && transfer.completed == size:
                    stage = 2
                    reached.yield("fetched")
                case .itemChanged(let local)
                where stage == 2 && local.path == path && !local.isPlaceholder && local.contentHash == contentHash:
                    reached.yield("placed")
                    reached.finish()
                    return
                default: break
                }
            }
            reached.finish()
        }
        // A bound, not a wait: the test awaits the desktop's events; should they never come, this ends the watcher
        // and the test fails on what it saw.
        let deadline = Task {
            try? await Task.sleep(for: .seconds(120))
            watcher.cancel()
        }
        defer { deadline.cancel() }
        var stages = milestones.makeAsyncIterator()

        _ = try await laptop.createItem(CreateItemRequest(id: item, path: path, kind: .file), in: Self.container)
        #expect(await stages.next() == "known", "the desktop knows the item")

        let references = try order.map {
            ChunkReference(hash: try ChunkHash(digest: SHA256.hash(data: $0)), size: Int64($0.count))
        }
        for start in stride(from: 0, to: pieces.count, by: 8) {
            try await laptop.uploadChunks(
                pieces[start..<start + 8].map { (try ChunkHash(digest: SHA256.hash(data: $0)), ByteBuffer(bytes: $0)) },
                in: Self.container)
        }
        let version = VersionID()
        #expect(
            try await laptop.appendDraft(
                DraftAppendRequest(from: 0, chunks: Array(references[..<10]), total: size), to: version, of: item,
                in: Self.container) == 10)
        #expect(
            try await laptop.appendDraft(
                DraftAppendRequest(from: 10, chunks: Array(references[10...]), total: size), to: version, of: item,
                in: Self.container) == references.count)
        #expect(await stages.next() == "fetched", "the desktop fetched the whole draft before the commit")
        let partial = desktop.layout.temporary.appendingPathComponent(
            "\(item.string).\(version.string).download.partial")
        #expect(Self.size(of: partial) == size)

        let served = service.figure("ubiquity_chunk_bytes_out_total")
        #expect(served >= content.count - pieces[3].count)
        let record = VersionRecord(
            id: version, itemID: item, manifest: .file(references), contentHash: contentHash, modificationDate: Date(),
            savingDevice: SavingDevice(id: DeviceID(), name: "laptop"))
        _ = try await laptop.commit(VersionPayload(record), in: Self.container)
        #expect(await stages.next() == "placed", "the committed version is in place on the desktop")
        #expect((try? Data(contentsOf: desktop.layout.url(of: path))) == Data(content))
        #expect(
            service.figure("ubiquity_chunk_bytes_out_total") == served,
            "placing the committed version downloaded no chunk again")
        running.cancel()
        _ = await running.result
        await service.remove()
    }

    static func size(of url: URL) -> Int64? {
        (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
    }
}
