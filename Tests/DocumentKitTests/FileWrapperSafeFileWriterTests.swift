import DocumentKit
import Foundation
import Testing

@Suite("SafeFileWriter")
struct FileWrapperSafeFileWriterTests {
    @Test("replaceItem creates, then replaces a file, leaving only the destination")
    func replaceFile() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("doc.txt")
            try SafeFileWriter.replaceItem(at: url) { try Data("one".utf8).write(to: $0) }
            #expect(try text(url) == "one")
            try SafeFileWriter.replaceItem(at: url) { try SafeFileWriter.writeFile(Data("two".utf8), to: $0) }
            #expect(try text(url) == "two")
            #expect(try listing(directory) == ["doc.txt"])
        }
    }

    @Test("the temporary location is a hidden sibling that does not exist yet")
    func temporaryLocation() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("doc.txt")
            try SafeFileWriter.replaceItem(at: url) { temporary in
                #expect(temporary.deletingLastPathComponent().standardizedFileURL == directory.standardizedFileURL)
                #expect(temporary.lastPathComponent.hasPrefix("."))
                #expect(!FileManager.default.fileExists(atPath: temporary.path))
                try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: false)
            }
            var isDirectory: ObjCBool = false
            #expect(
                FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue)
        }
    }

    @Test("a failing body leaves the destination untouched and no temporary item")
    func failingBody() throws {
        struct Failure: Error {}
        try withScratchDirectory { directory in
            let url = try makeFile("doc.txt", in: directory, "original")
            #expect(throws: Failure.self) {
                try SafeFileWriter.replaceItem(at: url) { temporary in
                    try Data("half".utf8).write(to: temporary)
                    throw Failure()
                }
            }
            #expect(try text(url) == "original")
            #expect(try listing(directory) == ["doc.txt"])
        }
    }

    @Test("a directory replaces a non-empty directory by exchange, and the old tree is gone")
    func directoryExchange() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("pkg")
            try FileManager.default.createDirectory(
                at: url.appendingPathComponent("old"), withIntermediateDirectories: true)
            try makeFile("x", in: url.appendingPathComponent("old"), "x")
            try SafeFileWriter.replaceItem(at: url) { temporary in
                try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: false)
                try makeFile("new", in: temporary, "n")
            }
            #expect(try listing(url) == ["new"])
            #expect(try listing(directory) == ["pkg"])
        }
    }

    @Test("writeFile refuses to overwrite and sets exact permissions")
    func writeFile() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("f")
            let identity = try SafeFileWriter.writeFile(Data("abc".utf8), to: url, permissions: 0o604)
            #expect(identity.size == 3)
            #expect(try identity.inode == inode(url))
            #expect(try permissions(url) == 0o604)
            #expect(throws: FileWrapperError.self) { try SafeFileWriter.writeFile(Data(), to: url) }
            #expect(try text(url) == "abc")
        }
    }

    @Test("a URL naming no item is refused")
    func invalidDestination() {
        expectFileWrapperError(.invalidURL) {
            try SafeFileWriter.replaceItem(at: URL(fileURLWithPath: "/")) { _ in }
        }
    }

    @Test("unique names stay within 255 bytes")
    func uniqueNames() {
        let taken: Set = ["a.txt", "a 2.txt"]
        #expect(MemberName.unique("a.txt") { taken.contains($0) } == "a 3.txt")
        #expect(MemberName.unique("b.txt") { taken.contains($0) } == "b.txt")
        #expect(!MemberName.isValid(String(repeating: "é", count: 128)))
        #expect(MemberName.isValid(String(repeating: "é", count: 127)))
    }
}
