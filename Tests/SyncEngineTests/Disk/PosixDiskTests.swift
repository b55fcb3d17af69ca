import Foundation
import Testing

@testable import SyncEngine

/// The machine's file system as the engine uses it.
@Suite("The machine's disk")
struct PosixDiskTests {
    @Test("A move takes a file or a folder to a free name and never replaces what is there")
    func moveNeverReplaces() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("disk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let disk = PosixDisk()
        let (source, target) = (root.appendingPathComponent("a"), root.appendingPathComponent("b"))
        try Data("first".utf8).write(to: source)
        try disk.moveItem(at: source, to: target)
        #expect(disk.identity(at: source) == nil)
        #expect(try Data(contentsOf: target) == Data("first".utf8))

        try Data("second".utf8).write(to: source)
        #expect(throws: (any Error).self) { try disk.moveItem(at: source, to: target) }
        #expect(try Data(contentsOf: source) == Data("second".utf8))
        #expect(try Data(contentsOf: target) == Data("first".utf8))

        let folder = root.appendingPathComponent("folder")
        try disk.createDirectory(at: folder.appendingPathComponent("inside"))
        let moved = root.appendingPathComponent("moved")
        try disk.moveItem(at: folder, to: moved)
        #expect(disk.identity(at: moved.appendingPathComponent("inside"))?.isDirectory == true)
        #expect(throws: (any Error).self) { try disk.moveItem(at: moved, to: target) }
        #expect(disk.identity(at: moved) != nil)
    }
}
