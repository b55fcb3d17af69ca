import DocumentKit
import Foundation
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@Suite("The seeds' grocery flow", .timeLimit(.minutes(5)))
struct GroceryFlowTests {
    @Test(
        "An item created on the laptop is a placeholder on the desktop; opening it there downloads it; the desktop's edit reverts the laptop's open document by itself",
        arguments: EngineMode.allCases)
    @MainActor
    func itemFlowsBetweenDevices(mode: EngineMode) async throws {
        try await withTwoDevices(mode, eagerDownloadLimit: 0) { laptop, desktop, _ in
            let name = "Item_\(UUID().uuidString).txt"
            let mine = GroceryItemDocument(fileURL: laptop.documents.appendingPathComponent(name))
            mine.name = "Milk"
            #expect(await mine.save(to: mine.fileURL, for: .forCreating))

            // The desktop's query for items finds it as a placeholder: known, not downloaded, no file.
            let query = MetadataQuery(ubiquity: desktop.ubiquity)
            query.predicate = #Predicate<MetadataItem> { $0.fileName.starts(with: "Item_") }
            query.start()
            #expect(await eventually { query.results.contains { $0.fileName == name } })
            let found = try #require(query.results.first { $0.fileName == name })
            #expect(found.downloadingStatus == .notDownloaded)
            let theirs = try #require(found.value(forAttribute: NSMetadataItemURLKey) as? URL)
            #expect(await eventually { (try? theirs.ubiquitousResourceValues())?.downloadingStatus == .notDownloaded })
            #expect(!FileManager.default.fileExists(atPath: theirs.path))
            #expect(FileManager.default.isUbiquitousItem(at: theirs))

            // Opening it downloads it first, with progress on the document meanwhile, then reads it.
            let opened = GroceryItemDocument(fileURL: theirs)
            var states: [Document.State] = []
            let updates = opened.stateUpdates
            let watcher = Task { @MainActor in
                for await state in updates { states.append(state) }
            }
            try await opened.openDocument()
            #expect(opened.name == "Milk")
            let current = await eventually { (try? theirs.ubiquitousResourceValues())?.downloadingStatus == .current }
            let asked = try? await FileManager.default.ubiquitousResourceValues(at: theirs)
            let recorded = try? LocalStateStore(url: desktop.folder.appendingPathComponent(".ubiquity/state.sqlite"))
                .item(at: ItemPath("Documents/\(name)"))
            #expect(
                current,
                "mirror: \(String(describing: try? theirs.ubiquitousResourceValues())); engine: \(String(describing: asked)); recorded: \(String(describing: recorded))"
            )
            #expect(await eventually { query.results.first { $0.fileName == name }?.downloadingStatus == .current })
            #expect(states.contains { $0.contains(.progressAvailable) })
            #expect(!opened.documentState.contains(.progressAvailable))
            watcher.cancel()

            // The desktop edits and saves; the laptop's open document reverts to it by itself.
            opened.rename("Oat milk")
            #expect(await opened.save(to: theirs, for: .forOverwriting))
            #expect(await eventually(.seconds(30)) { mine.name == "Oat milk" })
            #expect(!mine.hasUnsavedChanges)
            #expect(mine.documentState == .normal)
            _ = await opened.close()
            _ = await mine.close()
            query.stop()
        }
    }

    @Test(
        "Opening a placeholder while the service is down fails with a clear error and leaves the document closed",
        arguments: EngineMode.allCases)
    @MainActor
    func placeholderOpenFailsOffline(mode: EngineMode) async throws {
        try await withTwoDevices(mode, eagerDownloadLimit: 0) { laptop, desktop, service in
            let name = "Item_\(UUID().uuidString).txt"
            try Data("Bread".utf8).write(to: laptop.documents.appendingPathComponent(name))
            let theirs = desktop.documents.appendingPathComponent(name)
            #expect(await eventually { (try? theirs.ubiquitousResourceValues())?.downloadingStatus == .notDownloaded })
            await service.stop()

            let document = GroceryItemDocument(fileURL: theirs)
            await #expect(throws: DocumentError.self) { try await document.openDocument() }
            do {
                try await document.openDocument()
            } catch let error as DocumentError {
                #expect(error.code == .downloadFailed)
            }
            #expect(document.documentState.contains(.closed))
            #expect(!document.documentState.contains(.progressAvailable))
            #expect(!FileManager.default.fileExists(atPath: theirs.path))
        }
    }
}
