import Foundation
import SyncEngine
import SyncSimulation
import Synchronization
import Testing
import UbiquityProtocol

/// A new small file goes up as one creation with its first version; when the service applies it but its answer is
/// lost, the engine sends it again, and the service takes it as a commit to the record it made. The engine runs
/// against the simulated service (which answers as the real routes do) on a real disk and state database.
@Suite("A new file's creation whose answer was lost")
struct LostCreationTests {
    /// The service applied the request, but its answer did not come back.
    struct AnswerLost: Error {}

    /// How many creation requests of the file reached the service.
    final class Creations: Sendable {
        private let count = Mutex(0)

        /// Counts one; whether it is the first.
        func sent() -> Bool {
            count.withLock { count in
                count += 1; return count == 1
            }
        }

        var sentCount: Int { count.withLock { $0 } }
    }

    /// An engine whose first creation request of `Documents/List.txt` is applied by `world` and its answer lost; the
    /// rest are answered.
    private static func withEngine(
        _ world: ServiceWorld, _ body: (ContainerSync, ContainerLayout, Creations) async throws -> Void
    ) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-lost-creation-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let layout = ContainerLayout(root: root, container: world.container)
        let device = SavingDevice(id: DeviceID(), name: "laptop")
        let creations = Creations()
        let service = SimulatedSyncService(world: world, container: world.container, device: device) { label, work in
            let answer = try work()
            // The creation goes in a batch (with its chunk); this test's only file is its only operation.
            if label.hasPrefix("batch [create "), label.contains(" at Documents/List.txt]"), creations.sent() {
                throw AnswerLost()
            }
            return answer
        }
        let sync = try ContainerSync(
            layout: layout, client: ServiceClient(baseURL: "http://simulated.invalid"), service: service,
            device: device)
        try await body(sync, layout, creations)
    }

    private static func write(_ text: String, to path: String, in layout: ContainerLayout) throws {
        let url = layout.folder.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    /// The live file items of `world`, by path, with each one's versions.
    private static func files(in world: ServiceWorld) -> [String: [VersionRecord]] {
        var files: [String: [VersionRecord]] = [:]
        for (id, item) in world.liveItems() where item.kind == .file {
            files[item.path.string] = world.allVersions(of: id)
        }
        return files
    }

    @Test("Sent again unchanged, it is the version the service has: one item, one version, no conflict")
    func sentAgainUnchanged() async throws {
        let world = ServiceWorld()
        try await Self.withEngine(world) { sync, layout, creations in
            try Self.write("first list", to: "Documents/List.txt", in: layout)
            await #expect(throws: AnswerLost.self) { try await sync.syncOnce() }
            #expect(creations.sentCount == 1)
            #expect(Self.files(in: world)["Documents/List.txt"]?.count == 1, "the service made the item")

            try await sync.syncOnce()
            #expect(creations.sentCount == 2, "the creation went again")
            let versions = try #require(Self.files(in: world)["Documents/List.txt"])
            #expect(versions.count == 1)
            #expect(versions.allSatisfy { !$0.isConflict })
            let item = try #require(try await sync.item(at: try ItemPath("Documents/List.txt")))
            #expect(item.serverVersion == versions.first?.id && item.baseVersion == item.serverVersion)
            #expect(!item.hasUnresolvedConflicts && item.uploadError == nil)
        }
    }

    @Test("Edited before it was sent again, both contents are kept: nothing saved is lost")
    func editedBeforeSentAgain() async throws {
        let world = ServiceWorld()
        try await Self.withEngine(world) { sync, layout, _ in
            try Self.write("first list", to: "Documents/List.txt", in: layout)
            await #expect(throws: AnswerLost.self) { try await sync.syncOnce() }
            try Self.write("second list, longer", to: "Documents/List.txt", in: layout)
            try await sync.syncOnce()
            try await sync.syncOnce()

            let versions = try #require(Self.files(in: world)["Documents/List.txt"])
            let contents = Set(
                versions.compactMap { world.content(of: $0) }.map { String(decoding: $0, as: UTF8.self) })
            #expect(contents == ["first list", "second list, longer"])
            let current = try #require(world.liveItems().values.first { $0.path.string == "Documents/List.txt" })
            let local = try String(
                contentsOf: layout.folder.appendingPathComponent("Documents/List.txt"), encoding: .utf8)
            #expect(
                current.current.flatMap { world.content(of: $0) }.map { String(decoding: $0, as: UTF8.self) } == local)
            let item = try #require(try await sync.item(at: try ItemPath("Documents/List.txt")))
            #expect(item.serverVersion == current.current?.id && item.baseVersion == item.serverVersion)
        }
    }
}
