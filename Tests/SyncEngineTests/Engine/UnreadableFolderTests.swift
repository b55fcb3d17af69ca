import DocumentKit
import Foundation
import Testing
import UbiquityProtocol

@testable import SyncEngine

/// A folder that cannot be read (unreadable, a failing disk, no file descriptor left) stops neither the rest of the
/// container nor takes what is in it for gone: its items stay, here, on the service and on the other device, and
/// its own item says why until it can be read again.
@Suite("A folder that cannot be read")
struct UnreadableFolderTests {
    @Test(
        "Its items stay everywhere, the rest syncs, its item carries the error; once readable it syncs and the error goes, across a restart"
    )
    func unreadableFolder() async throws {
        let disk = CountingDisk()
        try await DevicePair.run(configuration: .init(disk: disk)) { pair in
            let (laptop, desktop) = (pair.laptop, pair.desktop)
            let notes = try ItemPath("Documents/Notes")
            let (a, c) = (try ItemPath("Documents/Notes/a.txt"), try ItemPath("Documents/Notes/Old/c.txt"))
            let (eggs, milk) = (try ItemPath("Documents/Eggs.txt"), try ItemPath("Documents/Milk.txt"))
            let added = try ItemPath("Documents/Notes/added.txt")
            for (path, text) in [(a, "a"), (c, "c"), (eggs, "eggs")] {
                try FileManager.default.createDirectory(
                    at: laptop.layout.url(of: path).deletingLastPathComponent(), withIntermediateDirectories: true)
                try pair.write(Data(text.utf8), to: path, on: laptop)
            }
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(pair.read(c, on: desktop) == Data("c".utf8))

            // A file is added in the laptop's Notes, then its permissions are taken away (what is below it then
            // looks absent to a `stat`); meanwhile other files change.
            try pair.write(Data("added".utf8), to: added, on: laptop)
            disk.unreachable.withLock { $0 = laptop.layout.url(of: notes).standardizedFileURL.path }
            try pair.write(Data("milk".utf8), to: milk, on: laptop)
            try pair.write(Data("more eggs".utf8), to: eggs, on: laptop)
            for scope in [ScanScope.everything, .paths([notes.string, a.string, milk.string, eggs.string])] {
                try await laptop.syncOnce(scanning: scope)
                for path in [a, c] { #expect(try await laptop.item(at: path) != nil, "\(path) taken for gone") }
                #expect(try await laptop.item(at: added) == nil, "nothing in the folder is known")
                let error = try #require(try await laptop.item(at: notes)?.uploadError)
                #expect(error.code == .localCopyUnreadable)
            }
            // An app evicting a file it cannot reach is refused: the file is not known to be as last synced.
            await #expect(throws: (any Error).self) { try await laptop.evict(a) }
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(pair.read(milk, on: desktop) == Data("milk".utf8), "the rest of the container stopped")
            #expect(pair.read(eggs, on: desktop) == Data("more eggs".utf8))
            #expect(pair.read(a, on: desktop) == Data("a".utf8) && pair.read(c, on: desktop) == Data("c".utf8))
            #expect(try await desktop.item(at: notes)?.uploadError == nil, "another device's error")

            // The engine stops and starts again; the folder can be read by then. A round for the service's changes
            // alone looks at it again: what was added goes up, and the error goes.
            laptop.releaseLock()
            let restarted = try ContainerSync(
                layout: laptop.layout, client: laptop.client, device: laptop.device,
                configuration: laptop.configuration)
            defer { restarted.releaseLock() }
            #expect(try await restarted.item(at: notes)?.uploadError?.code == .localCopyUnreadable)
            disk.unreachable.withLock { $0 = nil }
            try await restarted.syncOnce(scanning: .paths([]))
            #expect(try await restarted.item(at: notes)?.uploadError == nil)
            #expect(try await restarted.item(at: added) != nil)
            try await desktop.syncOnce()
            #expect(pair.read(added, on: desktop) == Data("added".utf8))
            #expect(pair.read(c, on: desktop) == Data("c".utf8))
        }
    }

    @Test("A local copy that cannot be looked at has changes for all anyone knows: not unchanged, not gone")
    func copyThatCannotBeLookedAt() throws {
        // A container whose folder's path is longer than the system takes (`ENAMETOOLONG`): every look at a copy
        // in it fails, as below a folder whose permissions were taken away (which root, running tests, would not
        // see). `FileManager.fileExists` says "no" to both; the engine's disk tells them apart.
        let deep = (0..<20).map { _ in String(repeating: "d", count: 250) }.joined(separator: "/")
        let layout = ContainerLayout(
            root: FileManager.default.temporaryDirectory.appendingPathComponent(deep),
            container: try ContainerID("TEAM.com.example.deep"))
        let path = try ItemPath("Documents/List.txt")
        #expect(!FileManager.default.fileExists(atPath: layout.url(of: path).path))
        #expect(PosixDisk().exists(layout.url(of: path)), "not known to be gone")
        let item = LocalItem(
            id: ItemID(), path: path, kind: .file,
            identity: FileIdentity(device: 1, inode: 2, size: 3, modified: 4, changed: 4), baseVersion: VersionID(),
            serverVersion: nil)
        #expect(item.hasLocalChanges(in: layout), "not known to be unchanged: evicting it could lose an edit")
    }

    @Test("A damaged list of unreadable folders is taken for none: rounds go on and sync")
    func damagedList() async throws {
        try await DevicePair.run { pair in
            let (laptop, desktop) = (pair.laptop, pair.desktop)
            try laptop.state.setValue("{not a list", forKey: ContainerSync.unreadableKey)
            let milk = try ItemPath("Documents/Milk.txt")
            try pair.write(Data("milk".utf8), to: milk, on: laptop)
            try await laptop.syncOnce(scanning: .paths([milk.string]))
            try await desktop.syncOnce()
            #expect(pair.read(milk, on: desktop) == Data("milk".utf8))
        }
    }

    @Test("Renamed while it cannot be read: the move goes up, and its item keeps the error until it can be read")
    func renamedWhileUnreadable() async throws {
        let disk = CountingDisk()
        try await DevicePair.run(configuration: .init(disk: disk)) { pair in
            let (laptop, desktop) = (pair.laptop, pair.desktop)
            let (notes, archive) = (try ItemPath("Documents/Notes"), try ItemPath("Documents/Archive"))
            let a = try ItemPath("Documents/Notes/a.txt")
            try FileManager.default.createDirectory(
                at: laptop.layout.url(of: notes), withIntermediateDirectories: true)
            try pair.write(Data("a".utf8), to: a, on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()

            // Notes is made unreadable, then renamed (a rename needs only its parent's permissions); what cannot be
            // read follows the folder.
            disk.unreachable.withLock { $0 = laptop.layout.url(of: notes).standardizedFileURL.path }
            try await laptop.syncOnce()
            try FileManager.default.moveItem(at: laptop.layout.url(of: notes), to: laptop.layout.url(of: archive))
            disk.unreachable.withLock { $0 = laptop.layout.url(of: archive).standardizedFileURL.path }
            for _ in 0..<2 {
                try await laptop.syncOnce()
                #expect(try await laptop.item(at: archive)?.uploadError?.code == .localCopyUnreadable)
            }
            try await desktop.syncOnce()
            #expect(try await desktop.item(at: archive)?.kind == .directory, "the move did not go up")

            disk.unreachable.withLock { $0 = nil }
            try await laptop.syncOnce()
            #expect(try await laptop.item(at: archive)?.uploadError == nil)
            try await desktop.syncOnce()
            #expect(pair.documents(on: laptop) == pair.documents(on: desktop))
        }
    }
}
