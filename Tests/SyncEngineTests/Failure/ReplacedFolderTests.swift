import DocumentKit
import Foundation
import Testing
import UbiquityProtocol
import UbiquityTestSupport

@testable import SyncEngine

/// The container's folder replaced under a running engine (moved aside and made again, a disk unmounted under it
/// with its mount point left empty) is not a user deleting everything in it.
@Suite("A container folder replaced under the engine")
struct ReplacedFolderTests {
    /// Moves `folder` aside, beside it, and makes an empty one (with an empty `Documents/`) in its place, as a disk
    /// unmounted under the engine leaves its mount point. Returns where the folder went.
    @discardableResult
    static func replaceWithEmptyFolder(_ folder: URL) throws -> URL {
        let aside = folder.deletingLastPathComponent().appendingPathComponent("moved-aside")
        try FileManager.default.moveItem(at: folder, to: aside)
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("Documents"), withIntermediateDirectories: true)
        return aside
    }

    @Test(
        "An empty folder in its place deletes nothing, here or on the other device; rounds fail, saying why, until it is back, then it syncs"
    )
    func replacedByEmptyFolder() async throws {
        try await DevicePair.run { pair in
            let (laptop, desktop) = (pair.laptop, pair.desktop)
            let paths = try ["a", "b"].map { try ItemPath("Documents/\($0).txt") }
            for path in paths { try pair.write(Data(path.name.utf8), to: path, on: laptop) }
            try await laptop.syncOnce()
            try await desktop.syncOnce()

            // The folder is moved aside and an empty one made in its place (a disk unmounted under the engine
            // leaves its empty mount point so).
            let folder = laptop.layout.folder
            let aside = try Self.replaceWithEmptyFolder(folder)
            for scope in [ScanScope.everything, .paths(Set(paths.map(\.string)))] {
                await #expect(throws: ProtocolError.self) { try await laptop.syncOnce(scanning: scope) }
            }
            try await desktop.syncOnce()
            for path in paths {
                #expect(pair.read(path, on: desktop) == Data(path.name.utf8), "\(path) deleted on the desktop")
                #expect(try await laptop.item(at: path) != nil)
            }

            // The folder comes back (the disk mounted again), with a file made meanwhile. A round for the service's
            // changes alone scans the whole folder first, since the last ones could not.
            let added = try ItemPath("Documents/added.txt")
            try Data("added".utf8).write(to: aside.appendingPathComponent(added.string))
            try FileManager.default.removeItem(at: folder)
            try FileManager.default.moveItem(at: aside, to: folder)
            try await laptop.syncOnce(scanning: .paths([]))
            try await desktop.syncOnce()
            #expect(pair.read(added, on: desktop) == Data("added".utf8))
            #expect(pair.documents(on: laptop) == pair.documents(on: desktop))
            #expect(pair.documents(on: desktop) == ["a.txt", "added.txt", "b.txt"])
        }
    }

    @Test(
        "An app's eviction while another folder is in its place is refused, and deletes nothing once the folder is back"
    )
    func evictionWhileReplaced() async throws {
        try await DevicePair.run { pair in
            let (laptop, desktop) = (pair.laptop, pair.desktop)
            let a = try ItemPath("Documents/a.txt")
            try pair.write(Data("a".utf8), to: a, on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()

            // The folder goes (an empty one in its place), an app asks to evict a file, and the folder comes back
            // before any round ran.
            let folder = laptop.layout.folder
            let aside = try Self.replaceWithEmptyFolder(folder)
            await #expect(throws: (any Error).self) { try await laptop.evict(a) }
            try FileManager.default.removeItem(at: folder)
            try FileManager.default.moveItem(at: aside, to: folder)

            try await laptop.syncOnce(scanning: .paths([]))
            try await desktop.syncOnce()
            #expect(pair.read(a, on: desktop) == Data("a".utf8), "deleted on the desktop")
            #expect(pair.read(a, on: laptop) == Data("a".utf8))
            #expect(try laptop.state.record(at: a)?.observation.local != nil)
        }
    }

    @Test("A container folder that is a link to another disk: that disk's folder replaced deletes nothing")
    func linkedFolderReplaced() async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-linked-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        // The laptop's container folder is a link to a folder on "another disk".
        let target = root.appendingPathComponent("disk/container", isDirectory: true)
        let layout = ContainerLayout(root: root.appendingPathComponent("laptop"), container: DevicePair.container)
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: layout.folder.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: layout.folder, withDestinationURL: target)
        func device(_ name: String, _ layout: ContainerLayout) async throws -> ContainerSync {
            try ContainerSync(
                layout: layout, client: try await service.signIn(account: "ada", device: name),
                device: SavingDevice(id: DeviceID(), name: name))
        }
        do {
            let laptop = try await device("laptop", layout)
            let desktop = try await device(
                "desktop",
                ContainerLayout(root: root.appendingPathComponent("desktop"), container: DevicePair.container))
            defer { laptop.releaseLock(); desktop.releaseLock() }
            let a = try ItemPath("Documents/a.txt")
            try Data("a".utf8).write(to: laptop.layout.url(of: a))
            try await laptop.syncOnce()
            try await desktop.syncOnce()

            // The folder the link leads to is replaced by an empty one (that disk unmounted, its mount point left).
            try Self.replaceWithEmptyFolder(target)
            await #expect(throws: ProtocolError.self) { try await laptop.syncOnce() }
            try await desktop.syncOnce()
            #expect((try? Data(contentsOf: desktop.layout.url(of: a))) == Data("a".utf8), "deleted on the desktop")
        } catch {
            await service.remove()
            throw error
        }
        await service.remove()
    }
}
