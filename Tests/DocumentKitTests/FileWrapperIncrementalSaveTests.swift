import DocumentKit
import Foundation
import Testing

@Suite("FileWrapper incremental saving")
struct FileWrapperIncrementalSaveTests {
    /// A package with four members, two levels deep; `aged` moves modification dates an hour back so the
    /// recorded identities are trusted without comparing contents.
    func makePackage(in directory: URL, aged: Bool) throws -> URL {
        let url = directory.appendingPathComponent("Doc.package")
        try FileManager.default.createDirectory(
            at: url.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try makeFile("a.txt", in: url, "alpha")
        try makeFile("b.txt", in: url, "bravo")
        try makeFile("c.txt", in: url.appendingPathComponent("sub"), "charlie")
        try makeFile("d.txt", in: url, "delta")
        if aged { try ageFiles(under: url) }
        return url
    }

    /// Replaces the member `name` of `root` with a new in-memory wrapper holding `text`.
    func replace(_ name: String, in root: FileWrapper, with text: String) throws {
        let old = try #require(root.fileWrappers?[name])
        root.removeFileWrapper(old)
        #expect(root.addRegularFile(withContents: Data(text.utf8), preferredFilename: name) == name)
    }

    @Test("unchanged members are hard-linked, changed ones written, over two saves", arguments: [false, true])
    func linksAcrossTwoSaves(aged: Bool) throws {
        try withScratchDirectory { directory in
            let url = try makePackage(in: directory, aged: aged)
            let a = url.appendingPathComponent("a.txt")
            let b = url.appendingPathComponent("b.txt")
            let c = url.appendingPathComponent("sub/c.txt")
            let d = url.appendingPathComponent("d.txt")
            let before = try [a, b, c, d].map(inode)

            let root = try FileWrapper(url: url)
            try replace("d.txt", in: root, with: "DELTA, edited")
            try root.write(to: url, options: [.atomic, .withNameUpdating], originalContentsURL: url)

            #expect(try inode(a) == before[0])
            #expect(try inode(b) == before[1])
            #expect(try inode(c) == before[2])
            #expect(try inode(d) != before[3])
            #expect(try text(d) == "DELTA, edited")
            #expect(try text(a) == "alpha")
            #expect(try listing(directory) == ["Doc.package"])

            // Second save: the member written from memory last time now has an origin too.
            let afterFirst = try inode(d)
            try replace("b.txt", in: root, with: "BRAVO, edited")
            try root.write(to: url, options: [.atomic, .withNameUpdating], originalContentsURL: url)

            #expect(try inode(a) == before[0])
            #expect(try inode(c) == before[2])
            #expect(try inode(d) == afterFirst)
            #expect(try inode(b) != before[1])
            #expect(try text(b) == "BRAVO, edited")
            #expect(try text(d) == "DELTA, edited")
            #expect(root.matchesContents(of: url))
            #expect(try listing(directory) == ["Doc.package"])
        }
    }

    @Test("saving a copy elsewhere links from the original and leaves it untouched")
    func saveAsCopy() throws {
        try withScratchDirectory { directory in
            let url = try makePackage(in: directory, aged: true)
            let root = try FileWrapper(url: url)
            try replace("a.txt", in: root, with: "ALPHA")
            let copy = directory.appendingPathComponent("Copy.package")
            try root.write(to: copy, options: .atomic, originalContentsURL: url)

            #expect(try inode(copy.appendingPathComponent("b.txt")) == inode(url.appendingPathComponent("b.txt")))
            #expect(
                try inode(copy.appendingPathComponent("sub/c.txt")) == inode(url.appendingPathComponent("sub/c.txt")))
            #expect(try text(copy.appendingPathComponent("a.txt")) == "ALPHA")
            #expect(try text(url.appendingPathComponent("a.txt")) == "alpha")
        }
    }

    @Test("without originalContentsURL everything is written afresh")
    func noOriginalMeansNoLinks() throws {
        try withScratchDirectory { directory in
            let url = try makePackage(in: directory, aged: true)
            let before = try inode(url.appendingPathComponent("a.txt"))
            let root = try FileWrapper(url: url)
            try root.write(to: url, options: .atomic, originalContentsURL: nil)
            #expect(try inode(url.appendingPathComponent("a.txt")) != before)
            #expect(try text(url.appendingPathComponent("a.txt")) == "alpha")
        }
    }

    @Test("a member modified on disk behind the wrapper's back is written, not linked", arguments: [false, true])
    func modifiedBehindTheBack(aged: Bool) throws {
        try withScratchDirectory { directory in
            let url = try makePackage(in: directory, aged: aged)
            let a = url.appendingPathComponent("a.txt")
            let b = url.appendingPathComponent("b.txt")
            let root = try FileWrapper(url: url)
            let inodeA = try inode(a)
            let inodeB = try inode(b)

            // Same size, same inode; with aged files even the modification date is put back, so only the
            // status-change time tells.
            let oldDate = try FileManager.default.attributesOfItem(atPath: b.path)[.modificationDate]
            try overwriteInPlace(b, with: "BRAVO")
            if aged, let oldDate {
                try FileManager.default.setAttributes([.modificationDate: oldDate], ofItemAtPath: b.path)
            }
            #expect(try text(b) == "BRAVO")

            try root.write(to: url, options: [.atomic, .withNameUpdating], originalContentsURL: url)
            #expect(try text(b) == "bravo", "the wrapper's contents win")
            #expect(try inode(b) != inodeB)
            #expect(try inode(a) == inodeA)
        }
    }

    @Test("a member whose attributes were reassigned is written, and the original keeps its permissions")
    func attributeChangeIsWritten() throws {
        try withScratchDirectory { directory in
            let url = try makePackage(in: directory, aged: true)
            let copy = directory.appendingPathComponent("Copy.package")
            let a = url.appendingPathComponent("a.txt")
            let originalPermissions = try permissions(a)
            let root = try FileWrapper(url: url)
            let member = try #require(root.fileWrappers?["a.txt"])
            var attributes = member.fileAttributes
            attributes[FileAttributeKey.posixPermissions.rawValue] = 0o600
            member.fileAttributes = attributes

            try root.write(to: copy, options: .atomic, originalContentsURL: url)
            #expect(try permissions(copy.appendingPathComponent("a.txt")) == 0o600)
            #expect(try inode(copy.appendingPathComponent("a.txt")) != inode(a))
            #expect(try permissions(a) == originalPermissions)
            #expect(try inode(copy.appendingPathComponent("b.txt")) == inode(url.appendingPathComponent("b.txt")))
        }
    }

    @Test("a renamed member is still linked from where it was read")
    func renamedMemberLinks() throws {
        try withScratchDirectory { directory in
            let url = try makePackage(in: directory, aged: true)
            let before = try inode(url.appendingPathComponent("a.txt"))
            let root = try FileWrapper(url: url)
            root.fileWrappers?["a.txt"]?.preferredFilename = "renamed.txt"
            try root.write(to: url, options: .atomic, originalContentsURL: url)
            #expect(try inode(url.appendingPathComponent("renamed.txt")) == before)
            #expect(!FileManager.default.fileExists(atPath: url.appendingPathComponent("a.txt").path))
        }
    }

    @Test("a flat file saved over itself is linked and leaves no temporary file")
    func flatFileOverItself() throws {
        try withScratchDirectory { directory in
            let url = try makeFile("flat.txt", in: directory, "flat")
            let before = try inode(url)
            let wrapper = try FileWrapper(url: url)
            try wrapper.write(to: url, options: [.atomic, .withNameUpdating], originalContentsURL: url)
            #expect(try inode(url) == before)
            #expect(try text(url) == "flat")
            #expect(try listing(directory) == ["flat.txt"])
        }
    }

    @Test("non-atomic saving over the original writes correct contents")
    func nonAtomicOverOriginal() throws {
        try withScratchDirectory { directory in
            let url = try makePackage(in: directory, aged: false)
            let root = try FileWrapper(url: url)
            try replace("a.txt", in: root, with: "ALPHA")
            try root.write(to: url, options: [], originalContentsURL: url)
            #expect(try text(url.appendingPathComponent("a.txt")) == "ALPHA")
            #expect(try text(url.appendingPathComponent("b.txt")) == "bravo")
            #expect(try text(url.appendingPathComponent("sub/c.txt")) == "charlie")
        }
    }

    @Test("needsToBeUpdated is false right after a save with name updating")
    func upToDateAfterSave() throws {
        try withScratchDirectory { directory in
            let url = try makePackage(in: directory, aged: false)
            let root = try FileWrapper(url: url)
            try replace("a.txt", in: root, with: "ALPHA")
            try root.write(to: url, options: [.atomic, .withNameUpdating], originalContentsURL: url)
            #expect(!root.needsToBeUpdated(from: url))
        }
    }
}
