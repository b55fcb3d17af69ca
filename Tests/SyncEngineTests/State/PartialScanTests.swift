import DocumentKit
import Foundation
import SyncEngine
import Synchronization
import Testing
import UbiquityProtocol

/// The engine scans only what file-system events named; these tests hold that to the full scan's answer.
@Suite("Scans of the paths events named find what a full scan finds")
struct PartialScanTests {
    /// Collects the watcher's bursts.
    final class Bursts: Sendable {
        private let scopes = Mutex<[ScanScope]>([])
        func add(_ scope: ScanScope) { scopes.withLock { $0.append(scope) } }
        func take() -> ScanScope {
            scopes.withLock { scopes in
                defer { scopes = [] }
                return scopes.reduce(ScanScope.paths([])) { $0.union($1) }
            }
        }
        var isEmpty: Bool { scopes.withLock { $0.isEmpty } }
    }

    /// The known items after `scan`: ids kept for the same file (device and inode), identities no longer racy.
    private func settle(_ known: [LocalItem], after scan: LocalScanner.Result) -> [LocalItem] {
        var ids: [String: ItemID] = [:]
        for item in known {
            if let identity = item.identity { ids["\(identity.device):\(identity.inode)"] = item.id }
        }
        return scan.items.values.map { found in
            var identity = found.identity
            identity.capturedAt = identity.modified + LocalFileIdentity.racyInterval + 1
            return LocalItem(
                id: ids["\(identity.device):\(identity.inode)"] ?? ItemID(), path: found.path, kind: found.kind,
                identity: identity, baseVersion: VersionID())
        }
    }

    @Test("Creations, safe saves, renames, moves of files and folders, package edits and deletions")
    func partialScansAgreeWithFullScans() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-partial-\(UUID().uuidString.prefix(8))", isDirectory: true)
        let documents = folder.appendingPathComponent("Documents", isDirectory: true)
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let types = DocumentTypeRegistry()
        types.register(
            DocumentType(
                identifier: "com.example.grocery-item", conformsTo: ["com.apple.package"], filenameExtensions: ["item"])
        )
        let scanner = LocalScanner(types: types)
        let bursts = Bursts()
        let watcher = try ContainerWatcher(folder: folder) { bursts.add($0) }
        defer { watcher.stop() }
        var known = settle([], after: try scanner.scan(folder))

        func file(_ path: String) -> URL { documents.appendingPathComponent(path) }
        func write(_ text: String, _ path: String) throws {
            try FileManager.default.createDirectory(
                at: file(path).deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: file(path))
        }
        let operations: [(String, () throws -> Void)] = [
            ("create a file", { try write("milk", "List.txt") }),
            (
                "save over it safely",
                {
                    try write("milk, eggs", ".List.txt.1f.tmp")
                    _ = rename(file(".List.txt.1f.tmp").path, file("List.txt").path)
                }
            ),
            ("rename it", { try FileManager.default.moveItem(at: file("List.txt"), to: file("Weekly.txt")) }),
            (
                "move it into a new folder",
                {
                    try FileManager.default.createDirectory(at: file("Shops"), withIntermediateDirectories: true)
                    try FileManager.default.moveItem(at: file("Weekly.txt"), to: file("Shops/Weekly.txt"))
                }
            ),
            ("move the folder", { try FileManager.default.moveItem(at: file("Shops"), to: file("Stores")) }),
            ("create a package", { try write("Milk", "Item_1.item/name.txt") }),
            ("change a package member", { try write("Oat milk", "Item_1.item/name.txt") }),
            ("add a package member", { try write("png", "Item_1.item/Images/photo.png") }),
            ("make a tree at once", { try write("deep", "A/B/C/deep.txt") }),
            ("delete a folder", { try FileManager.default.removeItem(at: file("Stores")) }),
            ("delete a package", { try FileManager.default.removeItem(at: file("Item_1.item")) }),
        ]
        for (name, operation) in operations {
            try operation()
            let full = try scanner.scan(folder)
            let expected = ScanChange.changes(known: known, scanned: full.items)
            #expect(!expected.isEmpty, "\(name): the step changed something")
            // The step's events may come as more than one burst: they are gathered until the paths they name cover
            // the change (or a hang guard passes), never for a fixed time.
            var scope = ScanScope.paths([])
            var found: Set<ScanChange> = []
            let deadline = ContinuousClock.now + .seconds(60)
            repeat {
                // The watcher hands its bursts to a callback; between them the file-system events are still on
                // their way in the kernel and the watcher's debounce, and nothing tells when the next one is due, so
                // the collector is looked at every 10 ms (the loop's end is the event: the paths cover the change).
                if bursts.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
                scope = scope.union(bursts.take())
                guard case .paths(let paths) = scope else { break }
                let roots = Set(paths.map(scanner.itemRoot)).subtracting([""])
                let partial = scanner.scan(folder, only: roots)
                let region = known.filter { item in
                    roots.contains { item.path.string == $0 || item.path.string.hasPrefix($0 + "/") }
                }
                found = ScanChange.changes(known: region, scanned: partial.items)
            } while found != expected && ContinuousClock.now < deadline
            guard case .paths(let paths) = scope else {
                Issue.record("\(name): the watcher asked for everything")
                continue
            }
            #expect(found == expected, "\(name): events named \(paths.sorted())")
            known = settle(known, after: full)
        }
    }

    @Test(
        "A folder or package that is there but cannot be read is reported unknown, not empty; one removed while read is nothing"
    )
    func unlistableFolder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-unlistable-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let notes = folder.appendingPathComponent("Documents/Notes", isDirectory: true)
        try FileManager.default.createDirectory(
            at: notes.appendingPathComponent("Old"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("Documents/List.item/Data"), withIntermediateDirectories: true)
        for name in ["a.txt", "b.txt", "Old/c.txt"] {
            try Data(name.utf8).write(to: notes.appendingPathComponent(name))
        }
        try Data("milk".utf8).write(to: folder.appendingPathComponent("Documents/List.item/Data/1"))
        try Data("eggs".utf8).write(to: folder.appendingPathComponent("Documents/Eggs.txt"))
        let disk = CountingDisk()
        let types = DocumentTypeRegistry()
        types.register(
            DocumentType(
                identifier: "com.example.grocery-item", conformsTo: ["com.apple.package"], filenameExtensions: ["item"])
        )
        let scanner = LocalScanner(types: types, disk: disk)
        func paths(_ result: LocalScanner.Result) -> Set<String> { Set(result.items.keys.map(\.string)) }
        let below: Set<String> = [
            "Documents/Notes/a.txt", "Documents/Notes/b.txt", "Documents/Notes/Old", "Documents/Notes/Old/c.txt",
        ]
        #expect(paths(scanner.scan(folder, only: ["Documents/Notes"])) == below.union(["Documents/Notes"]))

        // Unreadable, a failing disk, no descriptor left: what is in the folder and the package is not known.
        disk.beforeListing.withLock {
            $0 = { url in if ["Notes", "Data"].contains(url.lastPathComponent) { throw POSIXError(.EIO) } }
        }
        let notesPath = try ItemPath("Documents/Notes")
        let package = try ItemPath("Documents/List.item")
        let (c, eggs) = (try ItemPath("Documents/Notes/Old/c.txt"), try ItemPath("Documents/Eggs.txt"))
        for result in [
            scanner.scan(folder, only: ["Documents"]), try scanner.scan(folder),
            scanner.scan(folder, only: ["Documents/Notes", "Documents/List.item/Data/1", "Documents/Eggs.txt"]),
        ] {
            #expect(Set(result.unreadable.keys) == [notesPath, package])
            #expect(paths(result).isDisjoint(with: below), "nothing below an unreadable folder is reported")
            #expect(paths(result).isSuperset(of: ["Documents/Notes", "Documents/Eggs.txt"]))
            #expect(!paths(result).contains("Documents/List.item"), "a package not read is not reported")
            #expect(result.isUnknown(c) && result.isUnknown(package))
            #expect(!result.isUnknown(notesPath) && !result.isUnknown(eggs))
        }
        let listing = try scanner.scanFolder(folder, relative: "Documents")
        #expect(Set(listing.unreadable.keys) == [package])
        #expect(listing.folders.map(\.path) == [notesPath])
        #expect(throws: POSIXError.self) { try scanner.scanFolder(folder, relative: "Documents/Notes") }

        // Removed between being found and being listed: nothing is there, as a scan after finds.
        disk.beforeListing.withLock {
            $0 = { url in
                guard url.lastPathComponent == "Notes" else { return }
                try FileManager.default.removeItem(at: url)
                throw POSIXError(.ENOENT)
            }
        }
        let removed = scanner.scan(folder, only: ["Documents/Notes"])
        #expect(removed.items.isEmpty && removed.unreadable.isEmpty)
        disk.beforeListing.withLock { $0 = nil }
        #expect(
            paths(scanner.scan(folder, only: ["Documents"])) == [
                "Documents", "Documents/Eggs.txt", "Documents/List.item",
            ])
    }
}
