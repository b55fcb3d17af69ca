import Foundation
import Testing

@testable import DocumentKit

/// The one identity type and its rule, as documents, presenters and the sync engine all use them.
@Suite("FileIdentity: one rule for unchanged, one for racy")
struct FileIdentityTests {
    private func withFolder(_ body: (URL) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-identity-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try body(folder)
    }

    @Test("A rename or a permission change leaves a file unchanged; a rewrite or a replacement does not")
    func unchangedRule() throws {
        try withFolder { folder in
            let file = folder.appendingPathComponent("List.txt")
            try Data("milk".utf8).write(to: file)
            let recorded = try #require(FileIdentity.ofRegularFile(atPath: file.path))

            let renamed = folder.appendingPathComponent("Weekly.txt")
            try FileManager.default.moveItem(at: file, to: renamed)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: renamed.path)
            let moved = try #require(FileIdentity.ofRegularFile(atPath: renamed.path))
            #expect(moved.isUnchanged(since: recorded), "renamed and made private, the contents stay")
            #expect(moved != recorded, "equality still tells the status change")

            // A same-size rewrite in place shows in the modification time, unless it lands in the clock tick the
            // identity was taken in — which is what makes that identity racy.
            let handle = try FileHandle(forWritingTo: renamed)
            try handle.write(contentsOf: Data("eggs".utf8))
            try handle.close()
            let rewritten = try #require(FileIdentity.ofRegularFile(atPath: renamed.path))
            #expect(rewritten.isSameFile(as: recorded))
            #expect(
                rewritten.modified != recorded.modified ? !rewritten.isUnchanged(since: recorded) : recorded.isRacy,
                "a rewrite shows in the modification time, or the recorded identity was racy")

            try Data("bread".utf8).write(to: renamed, options: .atomic)
            let replaced = try #require(FileIdentity.ofRegularFile(atPath: renamed.path))
            #expect(!replaced.isSameFile(as: recorded), "a safe save replaces the file")
            #expect(!replaced.isUnchanged(since: recorded))
        }
    }

    @Test("An identity read with statx says what lstat says, and when the file was born where the disk keeps it")
    func statusAndBirth() throws {
        try withFolder { folder in
            let file = folder.appendingPathComponent("List.txt")
            let before = POSIX.now()
            try Data("milk".utf8).write(to: file)
            let identity = try #require(FileIdentity.of(path: file.path))
            for path in [file.path, folder.path] {
                var info = stat()
                #expect(lstat(path, &info) == 0)
                let read = try #require(FileIdentity.of(path: path))
                #expect(read == FileIdentity(info), "device, inode, size, times and mode as lstat spells them")
            }
            if identity.born != 0 {
                // Birth times come from the kernel's coarse clock, a tick behind the one read before the write.
                #expect(identity.born >= before - 100_000_000 && identity.born <= identity.capturedAt)
                #expect(identity.couldBeTheFileSeen(at: identity.capturedAt))
                #expect(!identity.couldBeTheFileSeen(at: identity.born - 1), "born after it was seen: another file")
            }
            #expect(FileIdentity.of(path: folder.appendingPathComponent("Missing.txt").path) == nil)
        }
        var unknown = FileIdentity(device: 1, inode: 2, size: 3, modified: 4, changed: 4)
        #expect(unknown.couldBeTheFileSeen(at: 1), "no birth time: any file with the inode may be the one seen")
        unknown.born = 10
        #expect(unknown.couldBeTheFileSeen(at: 0), "seen at a time not known")
    }

    @Test("A look-up tells nothing there from what cannot be looked at")
    func lookUp() throws {
        try withFolder { folder in
            let file = folder.appendingPathComponent("List.txt")
            try Data("milk".utf8).write(to: file)
            var found = try #require(try FileIdentity.lookUp(path: file.path))
            found.capturedAt = 0
            var read = try #require(FileIdentity.of(path: file.path))
            read.capturedAt = 0
            #expect(found == read)
            #expect(try FileIdentity.lookUp(path: folder.appendingPathComponent("Missing.txt").path) == nil)
            #expect(try FileIdentity.lookUp(path: file.appendingPathComponent("inside").path) == nil, "ENOTDIR")
            // A name longer than any file system keeps: whether something is there cannot be asked, as below a
            // folder whose permissions were taken away (which root, running tests, would not see).
            let overlong = folder.appendingPathComponent(String(repeating: "x", count: 300)).path
            #expect(throws: POSIXError(.ENAMETOOLONG)) { try FileIdentity.lookUp(path: overlong) }
            #expect(FileIdentity.of(path: overlong) == nil)
        }
    }

    @Test("An identity taken within 2 s of its modification is racy, for documents' origins as for the engine")
    func racyRule() throws {
        var identity = FileIdentity(device: 1, inode: 2, size: 3, modified: 10_000_000_000, changed: 10_000_000_000)
        identity.capturedAt = identity.modified + FileIdentity.racyInterval - 1
        #expect(identity.isRacy)
        identity.capturedAt = identity.modified + FileIdentity.racyInterval
        #expect(!identity.isRacy)
        let url = URL(fileURLWithPath: "/tmp/x")
        #expect(FileOrigin(url: url, identity: identity, recordedAt: identity.modified + 1_000_000_000).isRacy)
        #expect(!FileOrigin(url: url, identity: identity, recordedAt: identity.capturedAt).isRacy)
    }

    @Test("A package's identity with its members changes when a member does, however deep")
    func packageMembers() throws {
        try withFolder { folder in
            let package = folder.appendingPathComponent("Milk.item")
            try FileManager.default.createDirectory(
                at: package.appendingPathComponent("Images"), withIntermediateDirectories: true)
            try Data("png".utf8).write(to: package.appendingPathComponent("Images/photo.png"))
            let before = try #require(FileIdentity.of(path: package.path, members: true))
            #expect(before.isDirectory && before.members != 0)
            try Data("jpeg".utf8).write(to: package.appendingPathComponent("Images/photo.png"))
            let after = try #require(FileIdentity.of(path: package.path, members: true))
            #expect(!after.isUnchanged(since: before))
            #expect(FileIdentity.of(path: package.path)?.members == 0, "without members, the folder alone")
        }
    }
}
