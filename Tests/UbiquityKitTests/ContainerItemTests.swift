import DocumentKit
import Foundation
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@Suite("Containers and items", .timeLimit(.minutes(5)))
struct ContainerItemTests {
    @Test(
        "A file moved into the container reaches the other device; evicted and downloaded again; moved out it leaves every device; resource values at each step",
        arguments: EngineMode.allCases)
    func moveInEvictDownloadMoveOut(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let outside = laptop.root.deletingLastPathComponent().appendingPathComponent("laptop-outside.txt")
            try Data("shopping list".utf8).write(to: outside)
            let inside = laptop.documents.appendingPathComponent("List.txt")
            try FileManager.default.setUbiquitous(true, itemAt: outside, destinationURL: inside)
            #expect(!FileManager.default.fileExists(atPath: outside.path))
            #expect(FileManager.default.isUbiquitousItem(at: inside))

            // Uploaded on the laptop; current on the desktop.
            #expect(await eventually { (try? inside.ubiquitousResourceValues())?.isUploaded == true })
            let there = desktop.documents.appendingPathComponent("List.txt")
            #expect(await eventually { (try? there.ubiquitousResourceValues())?.downloadingStatus == .current })
            #expect(try String(contentsOf: there, encoding: .utf8) == "shopping list")

            // Evicted: a placeholder, still a ubiquitous item; downloaded again: current.
            try await FileManager.default.evictUbiquitousItem(at: there)
            #expect(!FileManager.default.fileExists(atPath: there.path))
            #expect(FileManager.default.isUbiquitousItem(at: there))
            #expect(try there.ubiquitousResourceValues().downloadingStatus == .notDownloaded)
            try await FileManager.default.startDownloadingUbiquitousItem(at: there)
            #expect(try String(contentsOf: there, encoding: .utf8) == "shopping list")
            #expect(await eventually { (try? there.ubiquitousResourceValues())?.downloadingStatus == .current })

            // Moved out on the desktop: kept there, gone from the laptop.
            let kept = desktop.root.deletingLastPathComponent().appendingPathComponent("desktop-kept.txt")
            try FileManager.default.setUbiquitous(false, itemAt: there, destinationURL: kept)
            #expect(try String(contentsOf: kept, encoding: .utf8) == "shopping list")
            #expect(await eventually { !FileManager.default.fileExists(atPath: inside.path) })
            #expect(await eventually { !FileManager.default.isUbiquitousItem(at: inside) })

            // Hostile or wrong-sided moves are refused and change nothing.
            #expect(throws: UbiquityError.self) {
                try FileManager.default.setUbiquitous(
                    true, itemAt: kept, destinationURL: laptop.folder.appendingPathComponent(".ubiquity/x"))
            }
            #expect(FileManager.default.fileExists(atPath: kept.path))
        }
    }

    @Test(
        "Moving a folder's documents to the cloud and back is one call each way; the other device sees them come and go",
        arguments: EngineMode.allCases)
    func preferredStorageSwitch(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let local = laptop.root.deletingLastPathComponent().appendingPathComponent(
                "laptop-local", isDirectory: true)
            try FileManager.default.createDirectory(at: local, withIntermediateDirectories: true)
            for name in ["Item_1.txt", "Item_2.txt", "Item_3.txt"] {
                try Data(name.utf8).write(to: local.appendingPathComponent(name))
            }
            let moved = try FileManager.default.setUbiquitous(true, itemsIn: local, destinationFolder: laptop.documents)
            #expect(moved.map(\.lastPathComponent) == ["Item_1.txt", "Item_2.txt", "Item_3.txt"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: local.path).isEmpty)
            for name in ["Item_1.txt", "Item_2.txt", "Item_3.txt"] {
                let there = desktop.documents.appendingPathComponent(name)
                #expect(await eventually { (try? String(contentsOf: there, encoding: .utf8)) == name })
            }

            // Back to local storage: the files stay on the laptop, and leave the desktop.
            try FileManager.default.setUbiquitous(false, itemsIn: laptop.documents, destinationFolder: local)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: local.path).sorted() == [
                    "Item_1.txt", "Item_2.txt", "Item_3.txt",
                ])
            #expect(
                await eventually {
                    ((try? FileManager.default.contentsOfDirectory(atPath: desktop.documents.path)) ?? ["?"]).isEmpty
                })
        }
    }

    @Test(
        "FileManager's calls use the default instance: its container URL, its identity token; nil for other containers")
    func defaultInstance() async throws {
        try await withTwoDevices(.embedded) { laptop, _, _ in
            let before = Ubiquity.default
            Ubiquity.default = laptop.ubiquity
            defer { Ubiquity.default = before }
            #expect(FileManager.default.url(forUbiquityContainerIdentifier: nil) == laptop.folder)
            #expect(FileManager.default.url(forUbiquityContainerIdentifier: laptop.container.string) == laptop.folder)
            #expect(FileManager.default.url(forUbiquityContainerIdentifier: "TEAM.com.example.other") == nil)
            #expect(FileManager.default.ubiquityIdentityToken == laptop.ubiquity.identityToken)
            #expect(FileManager.default.ubiquityIdentityToken != nil)
        }
    }
}
