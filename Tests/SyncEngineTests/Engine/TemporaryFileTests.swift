import DocumentKit
import Foundation
import SyncEngine
import Testing
import UbiquityProtocol

/// The files editors and tools write for a moment while saving — a safe save's hidden sibling, swap files, lock
/// files, backups, partial downloads — are not documents: they never go up, at the top of a folder or inside a
/// package, and the engine leaves them alone on disk.
@Suite("Temporary files of saves are never synced")
struct TemporaryFileTests {
    static let list = try! ItemPath("Documents/List.txt")
    static let package = try! ItemPath("Documents/Item_1.item")

    /// What editors leave beside `Documents/List.txt` while it is being saved or edited.
    static let beside = [
        ".List.txt.1a2b.tmp", ".List.txt.swp", "List.txt~", ".#List.txt", "#List.txt#", ".~lock.List.txt#",
        "4913", "Photo.jpg.part", "Photo.jpg.crdownload",
    ]
    /// What they leave inside the package `Documents/Item_1.item`.
    static let inside = [".name.txt.9f3c.tmp", ".name.txt.swp", "name.txt~", "Images/.photo.png.77aa.tmp"]

    static let types: DocumentTypeRegistry = {
        let types = DocumentTypeRegistry()
        types.register(
            DocumentType(
                identifier: "com.example.grocery-item", conformsTo: ["com.apple.package"], filenameExtensions: ["item"])
        )
        return types
    }()

    private func write(_ text: String, to relative: String, under folder: URL) throws {
        let url = folder.appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    @Test(
        "Temporary files beside a document and inside a package never reach the other device, and stay untouched here")
    func temporaryFilesStayHere() async throws {
        try await DevicePair.run(types: Self.types) { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            let documents = laptop.layout.documents
            let package = laptop.layout.url(of: Self.package)
            try devices.write(Data("milk".utf8), to: Self.list, on: laptop)
            try write("Milk", to: "name.txt", under: package)
            try write("png bytes", to: "Images/photo.png", under: package)
            for name in Self.beside { try write("half-saved \(name)", to: name, under: documents) }
            for name in Self.inside { try write("half-saved \(name)", to: name, under: package) }
            try await laptop.syncOnce()
            try await desktop.syncOnce()

            let real = ["Item_1.item", "Item_1.item/Images", "Item_1.item/Images/photo.png", "Item_1.item/name.txt"]
            #expect(devices.documents(on: desktop) == (real + ["List.txt"]).sorted())
            #expect(devices.read(Self.list, on: desktop) == Data("milk".utf8))
            let synced = try await laptop.items().filter { $0.kind != .directory }.map(\.path.string).sorted()
            #expect(synced == ["Documents/Item_1.item", "Documents/List.txt"])
            let onService = try await desktop.items().filter { $0.kind != .directory }.map(\.path.string).sorted()
            #expect(onService == synced, "the service has items the laptop does not show")
            for name in Self.beside {
                #expect(
                    try String(contentsOf: documents.appendingPathComponent(name), encoding: .utf8)
                        == "half-saved \(name)", "the engine touched \(name)")
            }
            for name in Self.inside {
                #expect(FileManager.default.fileExists(atPath: package.appendingPathComponent(name).path))
            }
        }
    }

    @Test("Temporary files changing inside a package or beside a document make no new version")
    func temporaryChangesMakeNoVersion() async throws {
        try await DevicePair.run(types: Self.types) { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            let package = laptop.layout.url(of: Self.package)
            try devices.write(Data("milk".utf8), to: Self.list, on: laptop)
            try write("Milk", to: "name.txt", under: package)
            try await laptop.syncOnce()
            let before = try await laptop.versions(of: Self.package)
            let listBefore = try await laptop.versions(of: Self.list)

            // An editor opens both and starts saving: its swap and temporary files appear, the documents do not change.
            for name in [".name.txt.9f3c.tmp", ".name.txt.swp", "name.txt~"] {
                try write("being edited \(name)", to: name, under: package)
            }
            try write("being edited", to: ".List.txt.swp", under: laptop.layout.documents)
            try await laptop.syncOnce()
            let after = try await laptop.versions(of: Self.package)
            #expect(after.current == before.current, "a temporary file inside the package made a new version")
            #expect(after.versions.count == before.versions.count)
            #expect(try await laptop.versions(of: Self.list).current == listBefore.current)

            try await desktop.syncOnce()
            #expect(devices.documents(on: desktop) == ["Item_1.item", "Item_1.item/name.txt", "List.txt"])
        }
    }
}
