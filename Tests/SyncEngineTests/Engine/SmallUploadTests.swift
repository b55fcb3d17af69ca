import Foundation
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

@Suite("Small content goes up with the request that names it")
struct SmallUploadTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    @Test(
        "A new small file, then an edit of it, each go up in one request that brings its chunk; the other device gets both"
    )
    func smallFileGoesUpInOneRequest() async throws {
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
        let laptop = try await device("laptop")
        let desktop = try await device("desktop")
        /// The requests one round of the laptop makes.
        func requests(ofRoundAfter change: () throws -> Void) async throws -> Int {
            try change()
            let before = service.figure("ubiquity_http_requests_total")
            try await laptop.syncOnce()
            return service.figure("ubiquity_http_requests_total") - before
        }
        try await laptop.syncOnce()
        let idle = try await requests(ofRoundAfter: {})

        let file = laptop.layout.documents.appendingPathComponent("Note.txt")
        let first = Data((0..<4096).map { UInt8($0 % 251) })
        let created = try await requests(ofRoundAfter: { try first.write(to: file) })
        #expect(created == idle + 1, "a round with nothing to do makes \(idle) requests; creating the file \(created)")
        #expect(service.figure("ubiquity_chunks_in_total") == 1)
        let edited = first + Data("and a line more".utf8)
        let committed = try await requests(ofRoundAfter: { try edited.write(to: file) })
        // The commit, and the read of the item when the feed tells of the edit: a device asks about its own commits
        // heard back (only a new item's creation is taken as known).
        #expect(committed == idle + 2, "a round with nothing to do makes \(idle) requests; the edit \(committed)")
        #expect(service.figure("ubiquity_chunks_in_total") == 2)

        try await desktop.syncOnce()
        #expect(try Data(contentsOf: desktop.layout.documents.appendingPathComponent("Note.txt")) == edited)
        let versions = try await desktop.versions(of: try ItemPath("Documents/Note.txt")).versions
        #expect(versions.count == 2, "the edit is a version of the file, based on the first")
        #expect(versions.first?.basedOn == versions.last?.id)
        await service.remove()
    }
}
