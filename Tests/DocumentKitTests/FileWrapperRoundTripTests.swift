import DocumentKit
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("FileWrapper round trips")
struct FileWrapperRoundTripTests {
    @Test("a regular file is written, read back and matched", arguments: [false, true])
    func regularFile(atomic: Bool) throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("note.txt")
            let contents = Data("hello, wrapper".utf8)
            let wrapper = FileWrapper(regularFileWithContents: contents)
            try wrapper.write(to: url, options: atomic ? .atomic : [], originalContentsURL: nil)

            let read = try FileWrapper(url: url)
            #expect(read.isRegularFile && !read.isDirectory && !read.isSymbolicLink)
            #expect(read.regularFileContents == contents)
            #expect(read.fileWrappers == nil)
            #expect(wrapper.matchesContents(of: url))
            try Data("changed".utf8).write(to: url)
            #expect(!wrapper.matchesContents(of: url))
            #expect(try listing(directory) == ["note.txt"])
        }
    }

    @Test("an empty file round-trips")
    func emptyFile() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("empty")
            try FileWrapper(regularFileWithContents: Data()).write(to: url, originalContentsURL: nil)
            #expect(try FileWrapper(url: url).regularFileContents == Data())
        }
    }

    @Test("a directory tree with nested directories and links round-trips", arguments: [false, true])
    func directoryTree(atomic: Bool) throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("Doc.package")
            let images = FileWrapper(directoryWithFileWrappers: [
                "a.png": FileWrapper(regularFileWithContents: Data([0, 1, 2, 255]))
            ])
            let root = FileWrapper(directoryWithFileWrappers: [
                "text.txt": FileWrapper(regularFileWithContents: Data("body".utf8)),
                "Images": images,
                "latest": FileWrapper(symbolicLinkWithDestinationURL: URL(fileURLWithPath: "Images/a.png")),
                "empty": FileWrapper(directoryWithFileWrappers: [:]),
            ])
            try root.write(to: url, options: atomic ? .atomic : [], originalContentsURL: nil)

            #expect(try listing(url) == ["Images", "empty", "latest", "text.txt"])
            #expect(try text(url.appendingPathComponent("text.txt")) == "body")
            let linkText = try FileManager.default.destinationOfSymbolicLink(atPath: url.path + "/latest")
            #expect(linkText == "Images/a.png")

            let read = try FileWrapper(url: url)
            #expect(read.isDirectory)
            #expect(Set(read.fileWrappers?.keys ?? [:].keys) == ["Images", "empty", "latest", "text.txt"])
            #expect(read.fileWrappers?["Images"]?.fileWrappers?["a.png"]?.regularFileContents == Data([0, 1, 2, 255]))
            #expect(read.fileWrappers?["latest"]?.isSymbolicLink == true)
            #expect(read.fileWrappers?["latest"]?.symbolicLinkDestinationURL?.relativePath == "Images/a.png")
            #expect(read.fileWrappers?["empty"]?.fileWrappers?.isEmpty == true)
            #expect(root.matchesContents(of: url))
            #expect(read.matchesContents(of: url))

            try makeFile("extra", in: url.appendingPathComponent("empty"), "x")
            #expect(!root.matchesContents(of: url))
        }
    }

    @Test("a symbolic link is read as a link, not followed, and written back verbatim")
    func symbolicLink() throws {
        try withScratchDirectory { directory in
            try makeFile("target.txt", in: directory, "target")
            let link = directory.appendingPathComponent("link")
            try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "target.txt")

            let read = try FileWrapper(url: link)
            #expect(read.isSymbolicLink)
            #expect(read.regularFileContents == nil)
            #expect(read.symbolicLinkDestinationURL?.relativePath == "target.txt")

            let copy = directory.appendingPathComponent("copy")
            try read.write(to: copy, options: .atomic, originalContentsURL: nil)
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: copy.path) == "target.txt")
            #expect(read.matchesContents(of: copy))

            let absolute = FileWrapper(symbolicLinkWithDestinationURL: URL(fileURLWithPath: "/etc/hostname"))
            let second = directory.appendingPathComponent("absolute")
            try absolute.write(to: second, originalContentsURL: nil)
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: second.path) == "/etc/hostname")
        }
    }

    @Test("atomic writing replaces a directory with a directory and leaves no temporary siblings")
    func atomicDirectoryOverDirectory() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("Doc.package")
            try FileManager.default.createDirectory(
                at: url.appendingPathComponent("old/deep"), withIntermediateDirectories: true)
            try makeFile("stale.txt", in: url, "stale")

            let root = FileWrapper(directoryWithFileWrappers: [:])
            root.addRegularFile(withContents: Data("new".utf8), preferredFilename: "fresh.txt")
            try root.write(to: url, options: .atomic, originalContentsURL: nil)

            #expect(try listing(url) == ["fresh.txt"])
            #expect(try text(url.appendingPathComponent("fresh.txt")) == "new")
            #expect(try listing(directory) == ["Doc.package"])
        }
    }

    @Test("atomic writing changes the kind of item: file over directory, directory over file")
    func atomicKindChange() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("item")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            try makeFile("inside", in: url, "x")

            try FileWrapper(regularFileWithContents: Data("flat".utf8)).write(
                to: url, options: .atomic, originalContentsURL: nil)
            #expect(try text(url) == "flat")

            try FileWrapper(directoryWithFileWrappers: ["a": FileWrapper(regularFileWithContents: Data("a".utf8))])
                .write(to: url, options: .atomic, originalContentsURL: nil)
            #expect(try listing(url) == ["a"])
            #expect(try listing(directory) == ["item"])
        }
    }

    @Test("non-atomic writing replaces an existing item")
    func nonAtomicReplaces() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("Doc.package")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            try makeFile("stale.txt", in: url, "stale")
            let root = FileWrapper(directoryWithFileWrappers: [
                "new.txt": FileWrapper(regularFileWithContents: Data("n".utf8))
            ])
            try root.write(to: url, originalContentsURL: nil)
            #expect(try listing(url) == ["new.txt"])
        }
    }

    @Test("attributes are read and applied: exact permissions and the file's modification date")
    func attributes() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("Doc.package")
            let file = FileWrapper(regularFileWithContents: Data("secret".utf8))
            let date = Date(timeIntervalSince1970: 1_000_000_000)
            file.fileAttributes = [
                FileAttributeKey.posixPermissions.rawValue: 0o640,
                FileAttributeKey.modificationDate.rawValue: date,
            ]
            let root = FileWrapper(directoryWithFileWrappers: ["secret.txt": file])
            root.fileAttributes = [FileAttributeKey.posixPermissions.rawValue: 0o750]
            try root.write(to: url, options: .atomic, originalContentsURL: nil)

            #expect(try permissions(url) == 0o750)
            #expect(try permissions(url.appendingPathComponent("secret.txt")) == 0o640)
            let read = try FileWrapper(url: url)
            let attributes = try #require(read.fileWrappers?["secret.txt"]?.fileAttributes)
            #expect(attributes[FileAttributeKey.posixPermissions.rawValue] as? Int == 0o640)
            #expect(attributes[FileAttributeKey.modificationDate.rawValue] as? Date == date)
            #expect(attributes[FileAttributeKey.size.rawValue] as? Int == 6)
            #expect(attributes[FileAttributeKey.type.rawValue] as? FileAttributeType == .typeRegular)
        }
    }

    @Test("read(from:) replaces the contents, and a failed read changes nothing")
    func rereading() throws {
        try withScratchDirectory { directory in
            let first = try makeFile("first.txt", in: directory, "one")
            let wrapper = try FileWrapper(url: first)
            let package = directory.appendingPathComponent("pkg")
            try FileManager.default.createDirectory(at: package, withIntermediateDirectories: false)
            try makeFile("member", in: package, "m")

            try wrapper.read(from: package)
            #expect(wrapper.isDirectory)
            #expect(wrapper.filename == "pkg")
            #expect(wrapper.fileWrappers?["member"]?.regularFileContents == Data("m".utf8))

            expectFileWrapperError(.noSuchFile) {
                try wrapper.read(from: directory.appendingPathComponent("missing"))
            }
            #expect(wrapper.isDirectory)
            #expect(wrapper.fileWrappers?["member"] != nil)
        }
    }

    @Test("needsToBeUpdated notices changed, added and removed members")
    func needsToBeUpdated() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("pkg")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            let member = try makeFile("a.txt", in: url, "a")
            let wrapper = try FileWrapper(url: url)
            #expect(!wrapper.needsToBeUpdated(from: url))
            #expect(!wrapper.needsToBeUpdated(fromPath: url.path))

            try makeFile("b.txt", in: url, "b")
            #expect(wrapper.needsToBeUpdated(from: url))
            try FileManager.default.removeItem(at: url.appendingPathComponent("b.txt"))
            #expect(!wrapper.needsToBeUpdated(from: url))

            try overwriteInPlace(member, with: "A")
            #expect(wrapper.needsToBeUpdated(from: url))
            #expect(FileWrapper(regularFileWithContents: Data("a".utf8)).needsToBeUpdated(from: member))
        }
    }

    @Test("sockets, FIFOs and devices are refused")
    func unsupportedType() throws {
        try withScratchDirectory { directory in
            let url = directory.appendingPathComponent("pkg")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            #expect(mkfifo(url.path + "/pipe", 0o600) == 0)
            expectFileWrapperError(.unsupportedFileType) { _ = try FileWrapper(url: url) }
        }
    }
}
