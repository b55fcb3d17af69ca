import DocumentKit
import Foundation
import SyncEngine
import Testing
import UbiquityProtocol

@Suite("Start-up scan: what changed on disk since the state database was in step")
struct LocalScanTests {
    /// A container folder in a fresh temporary directory, removed afterwards.
    private func withContainer(_ body: (ContainerLayout) throws -> Void) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-scan-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let layout = ContainerLayout(root: root, container: try ContainerID("TEAM.com.example.grocery"))
        try layout.create()
        try body(layout)
    }

    private func write(_ text: String, to path: String, in layout: ContainerLayout) throws {
        let url = layout.folder.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    private var types: DocumentTypeRegistry {
        let registry = DocumentTypeRegistry()
        registry.register(
            DocumentType(
                identifier: "com.example.grocery-item", conformsTo: ["com.apple.package"], filenameExtensions: ["item"])
        )
        return registry
    }

    @Test("The scan finds files, folders and packages (as one item), and leaves out .ubiquity, links and bad names")
    func scanFindsItems() throws {
        try withContainer { layout in
            try write("milk", to: "Documents/List.txt", in: layout)
            try write("x", to: "Documents/Trip/Notes.txt", in: layout)
            try write("name", to: "Documents/Milk.item/name.txt", in: layout)
            try write("png", to: "Documents/Milk.item/image.png", in: layout)
            try write("state", to: ".ubiquity/other", in: layout)
            try write("bad", to: "Documents/tab\there.txt", in: layout)
            try FileManager.default.createSymbolicLink(
                atPath: layout.folder.appendingPathComponent("Documents/Link").path, withDestinationPath: "List.txt")

            let result = try LocalScanner(types: types).scan(layout.folder)
            let kinds = result.items.mapValues(\.kind)
            #expect(
                kinds == [
                    try ItemPath("Documents"): .directory, try ItemPath("Documents/List.txt"): .file,
                    try ItemPath("Documents/Trip"): .directory, try ItemPath("Documents/Trip/Notes.txt"): .file,
                    try ItemPath("Documents/Milk.item"): .package,
                ])
            #expect(
                result.items[try ItemPath("Documents/Milk.item")]?.identity.size == 7,
                "a package's size is its members'")
            #expect(Set(result.skipped.keys) == ["Documents/Link", "Documents/tab\there.txt"])
        }
    }

    @Test("Edits, renames (same inode), deletions and creations are told apart without reading content")
    func detectorTellsChangesApart() throws {
        try withContainer { layout in
            try write("milk", to: "Documents/List.txt", in: layout)
            try write("eggs", to: "Documents/Eggs.txt", in: layout)
            try write("old", to: "Documents/Old.txt", in: layout)
            try write("name", to: "Documents/Milk.item/name.txt", in: layout)
            let scanner = LocalScanner(types: types)
            let first = try scanner.scan(layout.folder)
            // The state database after a sync: every scanned item known with its identity; one remote placeholder.
            // Identities taken just after the writes are racy (a same-size write in the same clock tick would not
            // show), so they are all to be checked...
            let racy = first.items.values.map {
                LocalItem(id: ItemID(), path: $0.path, kind: $0.kind, identity: $0.identity)
            }
            let checked = ScanChange.changes(known: racy, scanned: first.items)
            #expect(checked.count == racy.filter { $0.kind != .directory }.count)
            #expect(checked.allSatisfy { if case .modified = $0 { true } else { false } })
            // ...while ones taken well after the last write are trusted.
            var known = racy.map { item in
                var settled = item
                settled.identity?.capturedAt = (item.identity?.modified ?? 0) + 10_000_000_000
                return settled
            }
            known.append(
                LocalItem(id: ItemID(), path: try ItemPath("Documents/Remote.txt"), kind: .file, isPlaceholder: true))
            func id(_ path: String) throws -> ItemID { try #require(known.first { $0.path.string == path }).id }
            #expect(ScanChange.changes(known: known, scanned: first.items).isEmpty, "nothing changed yet")

            try write("milk, bread", to: "Documents/List.txt", in: layout)
            try FileManager.default.moveItem(
                at: layout.folder.appendingPathComponent("Documents/Eggs.txt"),
                to: layout.folder.appendingPathComponent("Documents/Breakfast.txt"))
            try write("new", to: "Documents/New/Fresh.txt", in: layout)
            try write("image", to: "Documents/Milk.item/image.png", in: layout)
            // Deleted after the new files are made, so that neither reuses its inode: with the capture times set
            // ahead above, a new file's birth would not tell it from the one seen (see `inodeGivenOutAgain`).
            try FileManager.default.removeItem(at: layout.folder.appendingPathComponent("Documents/Old.txt"))

            let changes = ScanChange.changes(known: known, scanned: try scanner.scan(layout.folder).items)
            #expect(
                changes == [
                    .deleted(try id("Documents/Old.txt")),
                    .moved(
                        try id("Documents/Eggs.txt"), from: try ItemPath("Documents/Eggs.txt"),
                        to: try ItemPath("Documents/Breakfast.txt")),
                    .created(try ItemPath("Documents/New"), .directory),
                    .created(try ItemPath("Documents/New/Fresh.txt"), .file),
                    .modified(try id("Documents/List.txt")),
                    .modified(try id("Documents/Milk.item")),
                ])
        }
    }

    @Test("A file removed and another made that the disk gives its inode number to are a deletion and a creation")
    func inodeGivenOutAgain() throws {
        try withContainer { layout in
            try write("milk", to: "Documents/List.txt", in: layout)
            let scanner = LocalScanner(types: types)
            let known = try scanner.scan(layout.folder).items.values.map {
                LocalItem(id: ItemID(), path: $0.path, kind: $0.kind, identity: $0.identity)
            }
            let list = try #require(known.first { $0.path.string == "Documents/List.txt" })
            // ext4 and xfs give the freed inode number to the next file made: the same number, size and, within a
            // clock tick, times. The new file is born after the old one was last seen, by the kernel's coarse clock
            // that birth times come from (within a tick of the scan, it would pass for the file seen).
            let seen = try #require(list.identity?.capturedAt)
            func coarseNow() -> Int64 {
                var now = timespec()
                clock_gettime(CLOCK_REALTIME_COARSE, &now)
                return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
            }
            while coarseNow() <= seen {}
            try FileManager.default.removeItem(at: layout.folder.appendingPathComponent("Documents/List.txt"))
            try write("eggs", to: "Documents/Eggs.txt", in: layout)
            let scanned = try scanner.scan(layout.folder).items
            let eggs = try #require(scanned[try ItemPath("Documents/Eggs.txt")])
            // A disk that keeps no birth times and gives the number out again cannot tell the files apart.
            guard eggs.identity.born != 0 || eggs.identity.inode != list.identity?.inode else { return }
            let changes = ScanChange.changes(known: known, scanned: scanned)
            #expect(
                changes.contains(.deleted(list.id)),
                "\(changes); inode \(eggs.identity.inode), was \(list.identity?.inode ?? 0)")
            #expect(changes.contains(.created(try ItemPath("Documents/Eggs.txt"), .file)))
            #expect(!changes.contains { if case .moved = $0 { true } else { false } })
        }
    }

    @Test("The state database keeps items and values across reopening")
    func stateStorePersists() throws {
        try withContainer { layout in
            let version = VersionID()
            let first = LocalItem(
                id: ItemID(), path: try ItemPath("Documents/A.txt"), kind: .file,
                identity: LocalFileIdentity(device: 1, inode: 2, size: 3, modified: 4, changed: 4),
                baseVersion: version,
                serverVersion: version, size: 3)
            let second = LocalItem(
                id: ItemID(), path: try ItemPath("Documents/B.txt"), kind: .file, isPlaceholder: true)
            do {
                let store = try LocalStateStore(url: layout.stateDatabase)
                try store.update(saving: [first, second])
                try store.setValue("f1.abc.7", forKey: "feedToken")
            }
            let reopened = try LocalStateStore(url: layout.stateDatabase)
            #expect(try reopened.items() == [first, second])
            #expect(try reopened.value(forKey: "feedToken") == "f1.abc.7")
            #expect(try reopened.item(at: try ItemPath("Documents/B.txt"))?.isPlaceholder == true)

            try reopened.update(removing: [second.id])
            #expect(try reopened.items() == [first])
        }
    }
}
