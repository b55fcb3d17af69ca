import DocumentKit
import Foundation
import Testing
import UbiquityTestSupport

@Suite("FileCoordinator across processes", .ownThread())
struct FileCoordinatorCrossProcessTests {
    @Test("another process's coordinated write keeps this process's reader out until it lets go")
    func writeInAnotherProcessExcludesReader() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("contended.txt")
        let held = sandbox.url("held.marker")
        let helper = try HelperProcess(["coord-hold-write", sandbox.lockDirectory, file.path, held.path])
        defer { helper.process.terminate() }
        #expect(eventually { FileManager.default.fileExists(atPath: held.path) })

        // While the helper holds the write, a reader cannot get in …
        let probe = #expect(throws: FileCoordinationError.self) {
            try sandbox.coordinator(accessTimeout: 0.3).coordinate(readingItemAt: file) { _ in
                Issue.record("read while another process was writing")
            }
        }
        #expect(probe?.code == .timedOut)
        #expect(probe?.message.contains(file.path) == true)

        // … and a reader that waits sees only what the helper wrote last, after it let go.
        let seen = Shared<String?>(nil)
        let reader = TestThread {
            let text = try? sandbox.coordinator(accessTimeout: 20).coordinate(readingItemAt: file) { url in
                try String(contentsOf: url, encoding: .utf8)
            }
            seen.update { $0 = text ?? "failed" }
        }
        helper.release()
        #expect(reader.join(timeout: 30))
        #expect(seen.current == "released")
        #expect(helper.wait() == 0)
    }

    @Test("another process's read is shared with readers here and keeps writers out")
    func readInAnotherProcessIsShared() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("shared.txt")
        let held = sandbox.url("held.marker")
        let helper = try HelperProcess(["coord-hold-read", sandbox.lockDirectory, file.path, held.path])
        defer { helper.process.terminate() }
        #expect(eventually { FileManager.default.fileExists(atPath: held.path) })

        let text = try sandbox.coordinator(accessTimeout: 5).coordinate(readingItemAt: file) { url in
            try String(contentsOf: url, encoding: .utf8)
        }
        #expect(text == "initial")
        let error = #expect(throws: FileCoordinationError.self) {
            try sandbox.coordinator(accessTimeout: 0.3).coordinate(writingItemAt: file) { _ in
                Issue.record("wrote while another process was reading")
            }
        }
        #expect(error?.code == .timedOut)
        // Writing the directory above is kept out too (the helper holds it shared).
        let directoryError = #expect(throws: FileCoordinationError.self) {
            try sandbox.coordinator(accessTimeout: 0.3).coordinate(writingItemAt: sandbox.root) { _ in }
        }
        #expect(directoryError?.code == .timedOut)

        helper.release()
        #expect(helper.wait() == 0)
        try sandbox.coordinator(accessTimeout: 10).coordinate(writingItemAt: file) { url in
            try Data("after".utf8).write(to: url)
        }
        #expect(try String(contentsOf: file, encoding: .utf8) == "after")
    }

    @Test("lock files live in the configured directory, named by a 16-digit hash")
    func lockFiles() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("x.txt")
        try sandbox.coordinator().coordinate(writingItemAt: file) { _ in }
        let names = try FileManager.default.contentsOfDirectory(atPath: sandbox.lockDirectory)
        #expect(!names.isEmpty)
        #expect(names.allSatisfy { $0.count == 16 && $0.allSatisfy(\.isHexDigit) })
        let attributes = try FileManager.default.attributesOfItem(atPath: sandbox.lockDirectory)
        #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o700)
    }

    @Test("a lock directory any user can write to, or a link in its place, is refused and left as it is")
    func lockDirectoryNotOwnOnly() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("x.txt")
        let shared = sandbox.root.appendingPathComponent("shared-locks").path
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        #expect(chmod(shared, 0o777) == 0)
        let sharedConfiguration = FileCoordinator.Configuration(lockDirectory: shared)
        let sharedError = #expect(throws: FileCoordinationError.self) {
            try FileCoordinator(filePresenter: nil, configuration: sharedConfiguration).coordinate(writingItemAt: file)
            { _ in }
        }
        #expect(sharedError?.code == .io)
        #expect(try FileManager.default.contentsOfDirectory(atPath: shared).isEmpty)

        let target = try sandbox.directory("elsewhere")
        let link = sandbox.root.appendingPathComponent("linked-locks").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target.path)
        let linkConfiguration = FileCoordinator.Configuration(lockDirectory: link)
        let linkError = #expect(throws: FileCoordinationError.self) {
            try FileCoordinator(filePresenter: nil, configuration: linkConfiguration).coordinate(readingItemAt: file) {
                _ in
            }
        }
        #expect(linkError?.code == .io)
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.path).isEmpty)
    }

    @Test("the default lock directory is under XDG_RUNTIME_DIR, else in /dev/shm, else the temporary directory")
    func defaultLockDirectory() {
        let directory = FileCoordinator.Configuration().lockDirectory
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            #expect(directory == runtime + "/ubiquity-coordination")
        } else if access("/dev/shm", W_OK | X_OK) == 0 {
            #expect(directory == "/dev/shm/ubiquity-coordination-\(getuid())")
        } else {
            #expect(directory.hasSuffix("/ubiquity-coordination-\(getuid())"))
        }
        #expect(FileCoordinator.Configuration().accessTimeout == 30)
        #expect(FileCoordinator.Configuration().presenterTimeout == 30)
    }
}
