import Foundation
import SyncEngine
import SyncSimulation
import Testing
import UbiquityProtocol

/// The engine sends a small version's chunks in the request that commits it; a service that does not read them (a
/// node older than the field, in a mixed deployment) answers that the chunks are missing. The engine runs against the
/// simulated service on a real disk and state database.
@Suite("A service that does not read the chunks a batch brings")
struct OlderServiceTests {
    @Test("New small files and an edit still reach it whole: their chunks go up on their own, then the request again")
    func chunksGoUpOnTheirOwn() async throws {
        let world = ServiceWorld()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-older-service-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let layout = ContainerLayout(root: root, container: world.container)
        let device = SavingDevice(id: DeviceID(), name: "laptop")
        var service = SimulatedSyncService(
            world: world, container: world.container, device: device, deliver: SimulatedSyncService.immediately)
        service.readsBroughtChunks = false
        let sync = try ContainerSync(
            layout: layout, client: ServiceClient(baseURL: "http://simulated.invalid"), service: service,
            device: device)
        var written: [String: Data] = [:]
        for index in 0..<5 {
            let bytes = Data("list \(index): eggs, flour, \(String(repeating: "milk ", count: index))".utf8)
            written["Documents/List \(index).txt"] = bytes
            try bytes.write(to: layout.folder.appendingPathComponent("Documents/List \(index).txt"))
        }
        try await sync.syncOnce()
        let edited = Data("list 0: eggs, flour, and butter".utf8)
        written["Documents/List 0.txt"] = edited
        try edited.write(to: layout.folder.appendingPathComponent("Documents/List 0.txt"))
        try await sync.syncOnce()

        var found: [String: Data] = [:]
        for (_, item) in world.liveItems() where item.kind == .file {
            let current = try #require(item.current)
            found[item.path.string] = Data(try current.manifest.chunks.flatMap { try world.chunk($0.hash) })
        }
        #expect(found == written)
        for path in written.keys {
            let item = try #require(try await sync.item(at: try ItemPath(path)))
            #expect(item.uploadError == nil, "\(path): \(String(describing: item.uploadError))")
        }
    }
}
