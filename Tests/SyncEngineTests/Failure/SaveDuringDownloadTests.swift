import DocumentKit
import Foundation
import SyncEngine
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityTestSupport

/// A save that lands while the engine puts a download in place — after it decided the local copy had no edits of
/// its own, before its coordinated write replaces the file — must not be lost. The engine-kill test meets this by
/// chance; here a file presenter makes it happen every time: asked to relinquish the file to the engine's write, it
/// saves first (as a save by another process could land at that instant).
@Suite("Failure: a save landing while a download is put in place")
struct SaveDuringDownloadTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")
    static let path = try! ItemPath("Documents/List.txt")

    /// Saves `contents` to its file the first time it is asked to give the file up to a writer.
    final class SavingPresenter: FilePresenter, Sendable {
        let presentedItemURL: URL?
        let presentedItemOperationQueue = OperationQueue()
        let contents: Data
        let saves = Mutex(0)

        init(_ url: URL, saving contents: Data) {
            presentedItemURL = url
            self.contents = contents
        }

        func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
            let first = saves.withLock {
                $0 += 1
                return $0 == 1
            }
            if first, let url = presentedItemURL { try? AppSave.replace.write(contents, to: url) }
            writer(nil)
        }
    }

    @Test(
        "A save landing while another device's edit is put in place is kept (uploaded next round), not overwritten"
    )
    func saveDuringDownloadIsKept() async throws {
        try await withDevices { laptop, desktop in
            try write("milk", to: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            try write("milk, eggs (desktop)", to: desktop)
            try await desktop.syncOnce()

            let saved = Data("milk, bread (laptop, saved during the download)".utf8)
            try await expectKept(saved, on: laptop, during: { try await laptop.syncOnce() })
        }
    }

    @Test(
        "A save landing while the current version is put in place after the device's upload became a conflict version is kept"
    )
    func saveDuringConflictDownloadIsKept() async throws {
        try await withDevices { laptop, desktop in
            try write("milk", to: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            // The laptop's edit is older than the desktop's, so the service keeps it as the conflict version and
            // the laptop brings the desktop's down over it at once.
            try write("milk, oats (laptop)", to: laptop)
            try await Task.sleep(for: .milliseconds(20))
            try write("milk, eggs (desktop)", to: desktop)
            try await desktop.syncOnce()

            let saved = Data("milk, oats, bread (laptop, saved during the download)".utf8)
            try await expectKept(saved, on: laptop, during: { try await laptop.syncOnce() })
        }
    }

    /// Runs `round` with a presenter that saves `saved` into the laptop's file when the engine writes it, then
    /// another round; `saved` must be a version of the item on the service, and the file must not have lost it
    /// silently.
    private func expectKept(
        _ saved: Data, on laptop: ContainerSync, during round: () async throws -> Void
    ) async throws {
        let url = laptop.layout.url(of: Self.path)
        let presenter = SavingPresenter(url, saving: saved)
        FileCoordinator.addFilePresenter(presenter)
        do {
            try await round()
        } catch {
            FileCoordinator.removeFilePresenter(presenter)
            throw error
        }
        FileCoordinator.removeFilePresenter(presenter)
        #expect(presenter.saves.withLock { $0 } >= 1, "the engine wrote no download over the file")
        try await laptop.syncOnce()
        let (_, versions) = try await laptop.versions(of: Self.path)
        let hash = try contentHash(saved)
        let onDisk = try contentHash(try Data(contentsOf: url))
        #expect(
            versions.contains { $0.contentHash == hash } || onDisk == hash,
            "the save made during the download is neither on the service nor on disk: it is lost")
        #expect(versions.contains { $0.contentHash == hash }, "the save made during the download never went up")
    }

    private func write(_ text: String, to device: ContainerSync) throws {
        try AppSave.replace.write(Data(text.utf8), to: device.layout.url(of: Self.path))
    }

    private func withDevices(_ body: (ContainerSync, ContainerSync) async throws -> Void) async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubq-save-download-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        func device(_ name: String) async throws -> ContainerSync {
            try ContainerSync(
                layout: ContainerLayout(root: root.appendingPathComponent(name), container: Self.container),
                client: try await service.signIn(account: "ada", device: name),
                device: SavingDevice(id: DeviceID(), name: name))
        }
        do {
            try await body(try await device("laptop"), try await device("desktop"))
        } catch {
            await service.remove()
            throw error
        }
        await service.remove()
    }
}

extension SaveDuringDownloadTests {
    @Test("A download that made way for a save leaves nothing in .ubiquity/tmp once the save went up and won")
    func downloadThatMadeWayLeavesNothing() async throws {
        try await withDevices { laptop, desktop in
            try write("milk", to: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            try write("milk, eggs (desktop)", to: desktop)
            try await desktop.syncOnce()
            // The save is the newest: once up, it is the current version and the laptop is in step with it.
            let saved = Data("milk, bread (laptop, saved during the download)".utf8)
            try await expectKept(saved, on: laptop, during: { try await laptop.syncOnce() })
            try await laptop.syncOnce()
            let item = try #require(try await laptop.item(at: Self.path))
            let current = try await laptop.versions(of: Self.path).current
            #expect(item.baseVersion == current, "the laptop is in step")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: laptop.layout.temporary.path)
            #expect(leftovers.isEmpty, "the laptop's .ubiquity/tmp holds \(leftovers), which nothing will use")
        }
    }
}
