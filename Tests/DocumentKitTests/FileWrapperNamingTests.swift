import DocumentKit
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("FileWrapper names and children")
struct FileWrapperNamingTests {
    @Test("reading sets filename and preferredFilename; in-memory wrappers have neither")
    func namesAfterReading() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("Doc.package")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            try makeFile("a.txt", in: url, "a")
            let read = try FileWrapper(url: url)
            #expect(read.filename == "Doc.package")
            #expect(read.preferredFilename == "Doc.package")
            #expect(read.fileWrappers?["a.txt"]?.filename == "a.txt")
            #expect(read.fileWrappers?["a.txt"]?.preferredFilename == "a.txt")

            let memory = FileWrapper(regularFileWithContents: Data())
            #expect(memory.filename == nil)
            #expect(memory.preferredFilename == nil)
        }
    }

    @Test("filenames change on write only with .withNameUpdating")
    func nameUpdating() throws {
        try withScratchDirectory { directory in
            let root = FileWrapper(directoryWithFileWrappers: [:])
            let child = FileWrapper(regularFileWithContents: Data("x".utf8))
            child.preferredFilename = "x.txt"
            let key = root.addFileWrapper(child)

            try root.write(to: directory.appendingPathComponent("A"), options: .atomic, originalContentsURL: nil)
            #expect(root.filename == nil)
            #expect(child.filename == nil)

            try root.write(
                to: directory.appendingPathComponent("B"), options: [.atomic, .withNameUpdating],
                originalContentsURL: nil)
            #expect(root.filename == "B")
            #expect(child.filename == key)
            #expect(child.preferredFilename == "x.txt")
        }
    }

    @Test("clashing names get a number before the extension")
    func uniquing() throws {
        let root = FileWrapper(directoryWithFileWrappers: [:])
        let keys = (0..<3).map { _ in root.addRegularFile(withContents: Data(), preferredFilename: "notes.txt") }
        #expect(keys == ["notes.txt", "notes 2.txt", "notes 3.txt"])
        #expect(root.addRegularFile(withContents: Data(), preferredFilename: "README") == "README")
        #expect(root.addRegularFile(withContents: Data(), preferredFilename: "README") == "README 2")
        #expect(root.addRegularFile(withContents: Data(), preferredFilename: ".hidden") == ".hidden")
        #expect(root.addRegularFile(withContents: Data(), preferredFilename: ".hidden") == ".hidden 2")
        #expect(root.fileWrappers?.count == 7)

        let long = String(repeating: "n", count: 251) + ".txt"
        #expect(root.addRegularFile(withContents: Data(), preferredFilename: long) == long)
        let second = root.addRegularFile(withContents: Data(), preferredFilename: long)
        #expect(second.utf8.count <= 255)
        #expect(second.hasSuffix(" 2.txt"))
    }

    @Test("uniqued names are what lands on disk and reads back")
    func uniquedNamesOnDisk() throws {
        try withScratchDirectory { directory in
            let root = FileWrapper(directoryWithFileWrappers: [:])
            root.addRegularFile(withContents: Data("1".utf8), preferredFilename: "a.txt")
            root.addRegularFile(withContents: Data("2".utf8), preferredFilename: "a.txt")
            let url = directory.appendingPathComponent("pkg")
            try root.write(to: url, options: .atomic, originalContentsURL: nil)
            #expect(try listing(url) == ["a 2.txt", "a.txt"])
            #expect(try text(url.appendingPathComponent("a 2.txt")) == "2")
        }
    }

    @Test("setting preferredFilename re-keys the child in its parent")
    func rekeying() throws {
        let root = FileWrapper(directoryWithFileWrappers: [:])
        let first = FileWrapper(regularFileWithContents: Data("1".utf8))
        first.preferredFilename = "one.txt"
        let second = FileWrapper(regularFileWithContents: Data("2".utf8))
        second.preferredFilename = "two.txt"
        root.addFileWrapper(first)
        root.addFileWrapper(second)

        second.preferredFilename = "renamed.txt"
        #expect(root.keyForFileWrapper(second) == "renamed.txt")
        #expect(root.fileWrappers?["two.txt"] == nil)

        second.preferredFilename = "one.txt"
        #expect(root.keyForFileWrapper(second) == "one 2.txt")
        #expect(root.keyForFileWrapper(first) == "one.txt")
        #expect(root.fileWrappers?.count == 2)
    }

    @Test("directoryWithFileWrappers gives unnamed children their key as preferred filename")
    func directoryInitNames() {
        let child = FileWrapper(regularFileWithContents: Data())
        let root = FileWrapper(directoryWithFileWrappers: ["k": child])
        #expect(child.preferredFilename == "k")
        child.preferredFilename = "j"
        #expect(root.keyForFileWrapper(child) == "j")
    }

    @Test("removeFileWrapper and keyForFileWrapper")
    func removing() throws {
        try withScratchDirectory { directory in
            let root = FileWrapper(directoryWithFileWrappers: [:])
            let keep = FileWrapper(regularFileWithContents: Data("k".utf8))
            keep.preferredFilename = "keep"
            let drop = FileWrapper(regularFileWithContents: Data("d".utf8))
            drop.preferredFilename = "drop"
            root.addFileWrapper(keep)
            #expect(root.addFileWrapper(drop) == "drop")
            #expect(root.addFileWrapper(drop) == "drop", "adding a child twice keeps its key")
            #expect(root.keyForFileWrapper(drop) == "drop")

            root.removeFileWrapper(drop)
            #expect(root.keyForFileWrapper(drop) == nil)
            #expect(root.fileWrappers?.keys.sorted() == ["keep"])
            root.removeFileWrapper(FileWrapper(regularFileWithContents: Data()))
            #expect(root.fileWrappers?.count == 1)

            drop.preferredFilename = "keep"
            #expect(root.keyForFileWrapper(keep) == "keep", "a removed child no longer re-keys its old parent")
            #expect(root.fileWrappers?.count == 1)

            let url = directory.appendingPathComponent("pkg")
            try root.write(to: url, options: .atomic, originalContentsURL: nil)
            #expect(try listing(url) == ["keep"])
        }
    }

    static let hostileNames = [
        "", ".", "..", "a/b", "../escape", "/absolute", "nul\u{0}byte", String(repeating: "x", count: 256),
        String(repeating: "é", count: 128),
    ]

    @Test("hostile member names are refused before anything is written", arguments: hostileNames, [false, true])
    func hostileNamesRefused(name: String, atomic: Bool) throws {
        try withScratchDirectory { directory in
            let inner = FileWrapper(directoryWithFileWrappers: [
                "fine.txt": FileWrapper(regularFileWithContents: Data("ok".utf8)),
                name: FileWrapper(regularFileWithContents: Data("evil".utf8)),
            ])
            let root = FileWrapper(directoryWithFileWrappers: [
                "a.txt": FileWrapper(regularFileWithContents: Data("a".utf8)),
                "inner": inner,
            ])
            let url = directory.appendingPathComponent("pkg")
            expectFileWrapperError(.invalidFilename) {
                try root.write(to: url, options: atomic ? .atomic : [], originalContentsURL: nil)
            }
            #expect(try listing(directory) == [], "nothing, not even a temporary item, was written")

            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            try makeFile("precious", in: url, "keep me")
            expectFileWrapperError(.invalidFilename) {
                try root.write(to: url, options: atomic ? .atomic : [], originalContentsURL: nil)
            }
            #expect(try listing(directory) == ["pkg"])
            #expect(try text(url.appendingPathComponent("precious")) == "keep me")
        }
    }

    @Test("a hostile preferred filename set after adding is refused on write")
    func hostileRename() throws {
        try withScratchDirectory { directory in
            let root = FileWrapper(directoryWithFileWrappers: [:])
            let child = FileWrapper(regularFileWithContents: Data())
            child.preferredFilename = "fine"
            root.addFileWrapper(child)
            child.preferredFilename = "../../etc/passwd"
            expectFileWrapperError(.invalidFilename) {
                try root.write(to: directory.appendingPathComponent("pkg"), options: .atomic, originalContentsURL: nil)
            }
            let entries = try listing(directory)
            #expect(entries == [])
        }
    }

    @Test("a member name on disk that is not UTF-8 is refused on read")
    func nonUTF8NameRefused() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("pkg")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            let bytes: [UInt8] = Array(url.path.utf8) + Array("/bad-\u{FF}".utf8.dropLast(2)) + [0xFF, 0xFE, 0]
            let descriptor = bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o644) }
            }
            #expect(descriptor >= 0)
            close(descriptor)
            expectFileWrapperError(.invalidFilename) { _ = try FileWrapper(url: url) }
            let wrapper = FileWrapper(regularFileWithContents: Data())
            expectFileWrapperError(.invalidFilename) { try wrapper.read(from: url) }
            #expect(wrapper.isRegularFile)
        }
    }

    @Test("a tree containing itself is refused")
    func cycleRefused() throws {
        try withScratchDirectory { directory in
            let inner = FileWrapper(directoryWithFileWrappers: [:])
            let root = FileWrapper(directoryWithFileWrappers: ["inner": inner])
            root.preferredFilename = "root"
            inner.addFileWrapper(root)
            expectFileWrapperError(.invalidStructure) {
                try root.write(to: directory.appendingPathComponent("pkg"), options: .atomic, originalContentsURL: nil)
            }
            let entries = try listing(directory)
            #expect(entries == [])
            inner.removeFileWrapper(root)
        }
    }

    @Test("a relative link destination with spaces, percent signs and accents is kept verbatim")
    func awkwardLinkDestination() throws {
        try withScratchDirectory { directory in
            let destination = "../é x/100%.txt"
            let root = FileWrapper(directoryWithFileWrappers: [
                "link": FileWrapper(symbolicLinkWithDestinationURL: URL(fileURLWithPath: destination))
            ])
            let url = directory.appendingPathComponent("pkg")
            try root.write(to: url, options: .atomic, originalContentsURL: nil)
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: url.path + "/link") == destination)
            let read = try FileWrapper(url: url)
            #expect(read.fileWrappers?["link"]?.symbolicLinkDestinationURL?.relativePath == destination)
        }
    }
}
