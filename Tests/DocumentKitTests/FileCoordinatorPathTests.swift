import Foundation
import Testing

@testable import DocumentKit

@Suite("FileCoordinator paths and lock plans")
struct FileCoordinatorPathTests {
    @Test("a plan takes shared locks on ancestors, merges modes, and sorts by key")
    func lockPlan() {
        let plan = CoordinationLockPlan(items: [("/b/y", .shared), ("/a/x", .exclusive), ("/a", .shared)])
        #expect(plan.locks.map(\.key) == ["/", "/a", "/a/x", "/b", "/b/y"])
        #expect(plan.locks.map(\.mode) == [.shared, .shared, .exclusive, .shared, .shared])
        // Writing a directory and reading inside it: the directory's lock is exclusive.
        let merged = CoordinationLockPlan(items: [("/a/x", .shared), ("/a", .exclusive)])
        #expect(merged.locks.first { $0.key == "/a" }?.mode == .exclusive)
        // The order does not depend on the order of the items.
        let reversed = CoordinationLockPlan(items: [("/a", .shared), ("/a/x", .exclusive), ("/b/y", .shared)])
        #expect(reversed.locks.map(\.key) == plan.locks.map(\.key))
    }

    @Test("lock file names are 16 hex digits of the 64-bit FNV-1a hash")
    func lockFileNames() {
        #expect(CoordinationPath.lockFileName(forKey: "") == "cbf29ce484222325")
        #expect(CoordinationPath.lockFileName(forKey: "a") == "af63dc4c8601ec8c")
        #expect(CoordinationPath.lockFileName(forKey: "/tmp/x").count == 16)
    }

    @Test("canonical paths resolve symbolic links in ancestors, not the item, and drop trailing slashes")
    func canonicalPaths() throws {
        let sandbox = try CoordinationSandbox()
        let real = try sandbox.directory("real")
        let link = sandbox.url("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        let itemLink = sandbox.url("real/item-link")
        try FileManager.default.createSymbolicLink(at: itemLink, withDestinationURL: sandbox.url("real/target"))

        #expect(try CoordinationPath.canonical(link.appendingPathComponent("a.txt")) == real.path + "/a.txt")
        #expect(
            try CoordinationPath.canonical(link.appendingPathComponent("missing/deeper/b.txt"))
                == real.path + "/missing/deeper/b.txt")
        #expect(try CoordinationPath.canonical(URL(fileURLWithPath: real.path + "/")) == real.path)
        #expect(try CoordinationPath.canonical(URL(fileURLWithPath: real.path + "/x/../y")) == real.path + "/y")
        #expect(try CoordinationPath.canonical(itemLink) == itemLink.path)
        #expect(try CoordinationPath.canonical(itemLink, resolvingItem: true) == itemLink.path)  // target missing
        #expect(throws: FileCoordinationError.self) { try CoordinationPath.canonical(URL(string: "http://x/y")!) }
        #expect(CoordinationPath.ancestors(of: "/a/b/c") == ["/", "/a", "/a/b"])
        #expect(CoordinationPath.isAncestor("/a", of: "/a/b"))
        #expect(!CoordinationPath.isAncestor("/a", of: "/ab"))
        #expect(CoordinationPath.isAncestor("/", of: "/a"))
    }

    @Test("the same item reached through a symbolic link is the same lock")
    func symbolicLinksShareLocks() throws {
        let sandbox = try CoordinationSandbox()
        let real = try sandbox.directory("real")
        let file = try sandbox.file("real/doc.txt")
        let link = sandbox.url("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        let code = Shared<FileCoordinationError.Code?>(nil)
        try sandbox.coordinator().coordinate(writingItemAt: file) { _ in
            // Another thread (this one may re-enter its own write) reads through the link.
            let reader = TestThread {
                do {
                    try sandbox.coordinator(accessTimeout: 0.3).coordinate(
                        readingItemAt: link.appendingPathComponent("doc.txt")
                    ) { _ in Issue.record("read through the link while the item was written") }
                } catch {
                    code.update { [found = coordinationCode(error)] in $0 = found }
                }
            }
            #expect(reader.join())
        }
        #expect(code.current == .timedOut)
    }

    @Test("resolvesSymbolicLink hands the accessor the link's target")
    func resolvesSymbolicLink() throws {
        let sandbox = try CoordinationSandbox()
        let target = try sandbox.file("target.txt", "target")
        let link = sandbox.url("link.txt")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        let seen = try sandbox.coordinator().coordinate(readingItemAt: link, options: .resolvesSymbolicLink) { $0 }
        #expect(seen.path == target.path)
        let unresolved = try sandbox.coordinator().coordinate(readingItemAt: link) { $0 }
        #expect(unresolved.path == link.path)
    }

    @Test("cancelling the task of an asynchronous coordination ends its wait")
    func asyncCancellation() async throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("busy.txt")
        let release = DispatchSemaphore(value: 0)
        let holding = Shared(false)
        let holder = TestThread {
            try? sandbox.coordinator().coordinate(writingItemAt: file) { _ in
                holding.update { $0 = true }
                release.wait()
            }
        }
        #expect(eventually { holding.current })
        let task = Task {
            try await sandbox.coordinator(accessTimeout: 60).coordinate(with: [.readingIntent(with: file)]) { true }
        }
        task.cancel()
        let result = await task.result
        #expect(throws: FileCoordinationError.self) { try result.get() }
        #expect(coordinationCode(result.failure) == .cancelled)
        release.signal()
        #expect(holder.join())
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
