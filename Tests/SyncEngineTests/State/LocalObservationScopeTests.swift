import DocumentKit
import Foundation
import Synchronization
import Testing
import UbiquityProtocol

@testable import SyncEngine

/// How much of the disk observing the paths events named looks at.
@Suite("Observing the paths events named")
struct LocalObservationScopeTests {
    @Test("A folder events named is listed once when nothing else writes its items' records meanwhile")
    func scopeObservedOnce() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-scope-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let disk = CountingDisk()
        let layout = ContainerLayout(root: root, container: try ContainerID("TEAM.com.example.scope"))
        // Observing the disk asks nothing of the service: none listens at this address.
        let sync = try ContainerSync(
            layout: layout, client: ServiceClient(baseURL: "http://127.0.0.1:9", token: "unused"),
            device: SavingDevice(id: DeviceID(), name: "desk"), configuration: .init(disk: disk))
        let folder = layout.folder.appendingPathComponent("Documents/Lists", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in ["Milk.txt", "Eggs.txt", "Bread.txt"] {
            try Data(name.utf8).write(to: folder.appendingPathComponent(name))
        }

        try await sync.observeLocal(.paths(["Documents/Lists"]))
        #expect(disk.listings(of: folder) == 1)
        let found = try sync.state.records(atOrBelow: ["Documents/Lists"]).sorted { $0.id.string < $1.id.string }
        #expect(Set(found.compactMap { $0.observation.local?.path.string }).count == 4)

        // Seen again with nothing changed: listed once more, nothing written.
        try await sync.observeLocal(.paths(["Documents/Lists"]))
        #expect(disk.listings(of: folder) == 2)
        let again = try sync.state.records(atOrBelow: ["Documents/Lists"]).sorted { $0.id.string < $1.id.string }
        #expect(again == found)
    }
}
