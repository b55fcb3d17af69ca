import DocumentKit
import Foundation
import SyncEngine
import UbiquityProtocol
import UbiquityTestSupport

/// Two devices of one account — a laptop and a desktop — each with its own container folder in a temporary
/// directory, syncing through a live service on loopback. The service and the folders go away after the test.
struct DevicePair {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    let laptop: ContainerSync
    let desktop: ContainerSync

    /// Runs `body` with two new devices using `configuration` and the document `types`.
    static func run(
        configuration: ContainerSync.Configuration = .init(), types: DocumentTypeRegistry = .default,
        _ body: (DevicePair) async throws -> Void
    ) async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-pair-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        func device(_ name: String) async throws -> ContainerSync {
            try ContainerSync(
                layout: ContainerLayout(root: root.appendingPathComponent(name), container: container),
                client: try await service.signIn(account: "ada", device: name),
                device: SavingDevice(id: DeviceID(), name: name), configuration: configuration, types: types)
        }
        do {
            try await body(DevicePair(laptop: try await device("laptop"), desktop: try await device("desktop")))
        } catch {
            await service.remove()
            throw error
        }
        await service.remove()
    }

    /// Saves `contents` to `path` on `device` as most applications do (a temporary sibling renamed over the file).
    func write(_ contents: Data, to path: ItemPath, on device: ContainerSync) throws {
        try AppSave.replace.write(contents, to: device.layout.url(of: path))
    }

    /// The bytes at `path` on `device`; `nil` when nothing is there.
    func read(_ path: ItemPath, on device: ContainerSync) -> Data? {
        try? Data(contentsOf: device.layout.url(of: path))
    }

    /// Every file and folder under `device`'s `Documents/`, relative to it, sorted.
    func documents(on device: ContainerSync) -> [String] {
        let folder = device.layout.documents.path
        return (FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? []).sorted()
    }
}
