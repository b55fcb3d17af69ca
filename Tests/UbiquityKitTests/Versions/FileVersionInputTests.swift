import Foundation
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@Suite("FileVersion: items without versions, and URLs that are not items", .timeLimit(.minutes(5)))
struct FileVersionInputTests {
    @Test(
        "Unknown identifiers find nothing; URLs outside a container, in its private folder or with no item are nil or a typed error; a synced item has its current version only",
        arguments: EngineMode.allCases)
    func badInput(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let url = laptop.documents.appendingPathComponent("Plain.txt")
            try Data("bread".utf8).write(to: url)
            #expect(await eventually { (try? url.ubiquitousResourceValues())?.isUploaded == true })
            let there = desktop.documents.appendingPathComponent("Plain.txt")
            #expect(await eventually { FileVersion.currentVersionOfItem(at: there) != nil })

            // A synced item: the same current version on both devices, nothing else.
            let current = try #require(FileVersion.currentVersionOfItem(at: url))
            #expect(FileVersion.currentVersionOfItem(at: there)?.persistentIdentifier == current.persistentIdentifier)
            #expect(current.url == url)
            #expect(current.hasLocalContents)
            #expect(!current.isConflict && current.isResolved)
            #expect(current.localizedName == "Plain.txt")
            #expect(current.modificationDate != nil)
            #expect(FileVersion.otherVersionsOfItem(at: url)?.isEmpty == true)
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: url)?.isEmpty == true)
            #expect(
                FileVersion.version(itemAt: url, forPersistentIdentifier: current.persistentIdentifier)?
                    .persistentIdentifier == current.persistentIdentifier)
            #expect(try await current.contentsURL() == url)
            current.isResolved = true  // not a conflict version: nothing to do
            #expect(try Self.expectError(.failed) { try current.remove() })
            #expect(try current.replaceItem(at: url) == url)
            #expect(try String(contentsOf: url, encoding: .utf8) == "bread")
            try FileVersion.removeOtherVersionsOfItem(at: url)  // none: nothing changes
            #expect(FileVersion.currentVersionOfItem(at: url)?.persistentIdentifier == current.persistentIdentifier)

            // Unknown identifiers.
            #expect(FileVersion.version(itemAt: url, forPersistentIdentifier: VersionID().string) == nil)
            #expect(FileVersion.version(itemAt: url, forPersistentIdentifier: "not a version") == nil)
            #expect(FileVersion.version(itemAt: url, forPersistentIdentifier: "") == nil)

            // No item at a URL inside the container.
            let missing = laptop.documents.appendingPathComponent("Missing.txt")
            #expect(FileVersion.currentVersionOfItem(at: missing) == nil)
            #expect(FileVersion.otherVersionsOfItem(at: missing) == nil)
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: missing) == nil)
            #expect(try Self.expectError(.itemNotFound) { try FileVersion.removeOtherVersionsOfItem(at: missing) })
            // A folder has no versions.
            #expect(FileVersion.currentVersionOfItem(at: laptop.documents) == nil)

            // Outside every container, or in the container's private folder.
            let outside = laptop.root.deletingLastPathComponent().appendingPathComponent("outside.txt")
            try Data("x".utf8).write(to: outside)
            let hidden = laptop.folder.appendingPathComponent(".ubiquity/state.sqlite")
            for url in [outside, hidden, URL(fileURLWithPath: "/")] {
                #expect(FileVersion.currentVersionOfItem(at: url) == nil)
                #expect(FileVersion.otherVersionsOfItem(at: url) == nil)
                #expect(FileVersion.unresolvedConflictVersionsOfItem(at: url) == nil)
                #expect(FileVersion.version(itemAt: url, forPersistentIdentifier: current.persistentIdentifier) == nil)
                #expect(try Self.expectError(.notUbiquitous) { try FileVersion.removeOtherVersionsOfItem(at: url) })
            }
            // Replacing a file outside with the current version's contents only copies them there.
            #expect(try current.replaceItem(at: outside) == outside)
            #expect(try String(contentsOf: outside, encoding: .utf8) == "bread")
            #expect(try String(contentsOf: url, encoding: .utf8) == "bread")
        }
    }

    @Test("A container this process has not opened yet: nothing found, changes refused with a clear error")
    func containerNotOpen() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-kit-test-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let container = try ContainerID("TEAM.com.example.grocery")
        let profile = DeviceProfile(
            server: "http://127.0.0.1:9", account: "alice", token: "none",
            device: SavingDevice(id: DeviceID(), name: "laptop"))
        let ubiquity = Ubiquity(
            configuration: UbiquityConfiguration(
                root: root, containers: [container], profile: profile, engine: .embedded,
                containerFolders: ContainerFolderRegister(folder: root.appendingPathComponent("register"))))
        let url = ContainerLayout(root: root, container: container).documents.appendingPathComponent("List.txt")
        #expect(FileVersion.currentVersionOfItem(at: url) == nil)
        #expect(FileVersion.otherVersionsOfItem(at: url) == nil)
        #expect(try Self.expectError(.engineUnavailable) { try FileVersion.removeOtherVersionsOfItem(at: url) })
        await ubiquity.shutdown()
    }

    /// Whether `body` throws a ``UbiquityError`` with `code`.
    private static func expectError(_ code: UbiquityError.Code, _ body: () throws -> Void) throws -> Bool {
        do {
            try body()
        } catch let error as UbiquityError {
            #expect(error.code == code, "\(error)")
            return error.code == code
        }
        return false
    }
}
