import DocumentKit
import Foundation
import Testing
import UbiquityProtocol

@testable import SyncEngine

/// A package whose folder cannot be listed (unreadable, a failing disk, no file descriptor left) is not known: read
/// without the members it could not list, it would go up without them, and other devices would lose them.
@Suite("A package that cannot be listed is neither read, nor unchanged, nor gone")
struct UnlistablePackageTests {
    @Test("Its content, its identity and the check before replacing it all refuse, or answer changed")
    func unlistablePackage() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-package-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let package = folder.appendingPathComponent("List.item", isDirectory: true)
        try FileManager.default.createDirectory(
            at: package.appendingPathComponent("Images"), withIntermediateDirectories: true)
        try Data("milk".utf8).write(to: package.appendingPathComponent("name.txt"))
        try Data("png".utf8).write(to: package.appendingPathComponent("Images/photo.png"))
        let disk = CountingDisk()
        let scanner = LocalScanner(disk: disk)
        let whole = try LocalContent(package: package, chunker: FileChunker(), disk: disk)
        let identity = try scanner.identity(of: package, kind: .package)
        #expect(whole.size == 7)

        disk.beforeListing.withLock {
            $0 = { url in if url.lastPathComponent == "Images" { throw POSIXError(.EIO) } }
        }
        #expect(throws: POSIXError.self) { try LocalContent(package: package, chunker: FileChunker(), disk: disk) }
        #expect(throws: POSIXError.self) { try scanner.identity(of: package, kind: .package) }
        let check = ContainerSync.checkLocalCopy(
            at: package, recorded: identity, contentHash: whole.contentHash, kind: .package, scanner: scanner,
            chunker: FileChunker())
        #expect(check == .changed, "not to be replaced or removed: what is in it is not known")

        disk.beforeListing.withLock { $0 = nil }
        #expect(try LocalContent(package: package, chunker: FileChunker(), disk: disk).contentHash == whole.contentHash)
    }
}
