import Foundation
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

@Suite("Small content travels with the request, or the news, that names it")
struct SmallUploadTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    /// Two devices of one account on a live service on loopback, handed to `body` with the service.
    private static func withDevices(
        _ body: (LocalService, ContainerSync, ContainerSync) async throws -> Void
    ) async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-small-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        func device(_ name: String) async throws -> ContainerSync {
            try ContainerSync(
                layout: ContainerLayout(root: root.appendingPathComponent(name), container: Self.container),
                client: try await service.signIn(account: "ada", device: name),
                device: SavingDevice(id: DeviceID(), name: name))
        }
        do {
            try await body(service, try await device("laptop"), try await device("desktop"))
        } catch {
            await service.remove()
            throw error
        }
        await service.remove()
    }

    /// The requests one round of `device` makes after `change`.
    private static func requests(
        of service: LocalService, roundOf device: ContainerSync, after change: () throws -> Void = {}
    ) async throws -> Int {
        try change()
        let before = service.figure("ubiquity_http_requests_total")
        try await device.syncOnce()
        return service.figure("ubiquity_http_requests_total") - before
    }

    @Test(
        "A new small file, then an edit of it, each go up in one request that brings its chunk; the other device gets both"
    )
    func smallFileGoesUpInOneRequest() async throws {
        try await Self.withDevices { service, laptop, desktop in
            try await laptop.syncOnce()
            let idle = try await Self.requests(of: service, roundOf: laptop)

            let file = laptop.layout.documents.appendingPathComponent("Note.txt")
            let first = Data((0..<4096).map { UInt8($0 % 251) })
            let created = try await Self.requests(of: service, roundOf: laptop) { try first.write(to: file) }
            #expect(
                created == idle + 1, "a round with nothing to do makes \(idle) requests; creating the file \(created)")
            #expect(service.figure("ubiquity_chunks_in_total") == 1)
            let edited = first + Data("and a line more".utf8)
            let committed = try await Self.requests(of: service, roundOf: laptop) { try edited.write(to: file) }
            // The commit, and the read of the item when the feed tells of the edit: a device asks about its own
            // commits heard back (only a new item's creation is taken as known).
            #expect(committed == idle + 2, "a round with nothing to do makes \(idle) requests; the edit \(committed)")
            #expect(service.figure("ubiquity_chunks_in_total") == 2)

            try await desktop.syncOnce()
            #expect(try Data(contentsOf: desktop.layout.documents.appendingPathComponent("Note.txt")) == edited)
            let versions = try await desktop.versions(of: try ItemPath("Documents/Note.txt")).versions
            #expect(versions.count == 2, "the edit is a version of the file, based on the first")
            #expect(versions.first?.basedOn == versions.last?.id)
        }
    }

    @Test(
        "New small files from another device come with the feed page that tells of them: the round that brings them makes no more requests than one with nothing to do"
    )
    func smallFilesComeWithTheFeed() async throws {
        try await Self.withDevices { service, laptop, desktop in
            try await desktop.syncOnce()
            let idle = try await Self.requests(of: service, roundOf: desktop)
            var written: [String: Data] = [:]
            for index in 0..<12 {
                let bytes = Data((0..<(index * 1500)).map { UInt8(($0 + index) % 256) })
                written["Note \(index).txt"] = bytes
                try bytes.write(to: laptop.layout.documents.appendingPathComponent("Note \(index).txt"))
            }
            try await laptop.syncOnce()
            let sent = service.figure("ubiquity_chunk_bytes_out_total")

            let brought = try await Self.requests(of: service, roundOf: desktop)
            #expect(brought == idle, "a round with nothing to do makes \(idle) requests; bringing 12 files \(brought)")
            for (name, bytes) in written {
                #expect(try Data(contentsOf: desktop.layout.documents.appendingPathComponent(name)) == bytes, "\(name)")
            }
            let carried = service.figure("ubiquity_chunk_bytes_out_total") - sent
            #expect(carried == written.values.reduce(0) { $0 + $1.count }, "each byte came once, with the feed")
        }
    }
}
