import DocumentKit
import Foundation
import Synchronization
import Testing

import struct UbiquityTestSupport.OwnThreadTrait

@Suite("FileCoordinator locking in one process", .ownThread())
struct FileCoordinatorLockingTests {
    @Test("concurrent readers are inside the same item at once")
    func readersOverlap() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("shared.txt")
        let readers = 4
        let inside = Shared(0)
        let maximum = Shared(0)
        let threads = (0..<readers).map { _ in
            TestThread {
                try? sandbox.coordinator().coordinate(readingItemAt: file) { _ in
                    let now = inside.update {
                        $0 += 1; return $0
                    }
                    maximum.update { $0 = max($0, now) }
                    // Wait (bounded) until every reader has been inside at once: only possible if readers share.
                    eventually { maximum.current == readers }
                    inside.update { $0 -= 1 }
                }
            }
        }
        for thread in threads { #expect(thread.join(timeout: 30)) }
        #expect(maximum.current == readers)
    }

    @Test("a writer excludes readers and other writers")
    func writerExcludes() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("item.txt")
        let readersInside = Atomic<Int>(0)
        let writersInside = Atomic<Int>(0)
        let violations = Atomic<Int>(0)
        let writes = Atomic<Int>(0)
        let threads = (0..<6).map { index in
            TestThread {
                let coordinator = sandbox.coordinator()
                for iteration in 0..<40 {
                    if (index + iteration) % 3 == 0 {
                        try? coordinator.coordinate(writingItemAt: file) { url in
                            if writersInside.add(1, ordering: .sequentiallyConsistent).newValue != 1 {
                                violations.add(1, ordering: .sequentiallyConsistent)
                            }
                            if readersInside.load(ordering: .sequentiallyConsistent) != 0 {
                                violations.add(1, ordering: .sequentiallyConsistent)
                            }
                            try? Data("\(index)-\(iteration)".utf8).write(to: url)
                            usleep(200)
                            writes.add(1, ordering: .sequentiallyConsistent)
                            writersInside.subtract(1, ordering: .sequentiallyConsistent)
                        }
                    } else {
                        try? coordinator.coordinate(readingItemAt: file) { url in
                            readersInside.add(1, ordering: .sequentiallyConsistent)
                            if writersInside.load(ordering: .sequentiallyConsistent) != 0 {
                                violations.add(1, ordering: .sequentiallyConsistent)
                            }
                            _ = try? Data(contentsOf: url)
                            usleep(200)
                            readersInside.subtract(1, ordering: .sequentiallyConsistent)
                        }
                    }
                }
            }
        }
        for thread in threads { #expect(thread.join(timeout: 60)) }
        #expect(violations.load(ordering: .sequentiallyConsistent) == 0)
        #expect(writes.load(ordering: .sequentiallyConsistent) == 80)
    }

    @Test("writing a directory waits for a reader inside it; a sibling directory is not blocked")
    func directoryWriterWaitsForReaderInside() throws {
        let sandbox = try CoordinationSandbox()
        let folder = try sandbox.directory("folder")
        let inner = try sandbox.file("folder/inner.txt")
        let sibling = try sandbox.file("other/file.txt")
        let release = DispatchSemaphore(value: 0)
        let holding = Shared(false)
        let reader = TestThread {
            try? sandbox.coordinator().coordinate(readingItemAt: inner) { _ in
                holding.update { $0 = true }
                release.wait()
            }
        }
        #expect(eventually { holding.current })

        let blocked = #expect(throws: FileCoordinationError.self) {
            try sandbox.coordinator(accessTimeout: 0.3).coordinate(writingItemAt: folder, options: .forDeleting) { _ in
                Issue.record("the directory write ran while a reader was inside")
            }
        }
        #expect(blocked?.code == .timedOut)
        #expect(blocked?.message.contains(folder.path) == true)
        // Writers of other children of the same parent are not blocked.
        try sandbox.coordinator(accessTimeout: 5).coordinate(writingItemAt: sibling) { url in
            try Data("sibling".utf8).write(to: url)
        }
        try sandbox.coordinator(accessTimeout: 5).coordinate(writingItemAt: sandbox.url("folder/new.txt")) { url in
            try Data("new".utf8).write(to: url)
        }
        release.signal()
        #expect(reader.join())
        let ran = try sandbox.coordinator().coordinate(writingItemAt: folder) { _ in true }
        #expect(ran)
    }

    @Test("access to a package member locks the whole package")
    func packageIsLockedAsAWhole() throws {
        DocumentTypeRegistry.default.register(
            DocumentType(
                identifier: "com.example.coordination-test-package",
                conformsTo: [DocumentType.packageIdentifier],
                filenameExtensions: ["coordpkg"]))
        let sandbox = try CoordinationSandbox()
        let package = try sandbox.directory("Doc.coordpkg")
        let member = try sandbox.file("Doc.coordpkg/contents.json")
        let otherMember = try sandbox.file("Doc.coordpkg/Data/image.png")
        let release = DispatchSemaphore(value: 0)
        let holding = Shared(false)
        let reader = TestThread {
            try? sandbox.coordinator().coordinate(readingItemAt: member) { _ in
                holding.update { $0 = true }
                release.wait()
            }
        }
        #expect(eventually { holding.current })
        for target in [package, otherMember] {
            let error = #expect(throws: FileCoordinationError.self) {
                try sandbox.coordinator(accessTimeout: 0.3).coordinate(writingItemAt: target) { _ in
                    Issue.record("wrote \(target.path) while the package was being read")
                }
            }
            #expect(error?.code == .timedOut)
            #expect(error?.message.contains(package.path) == true)
        }
        // Reading another member shares the package with the reader.
        let read = try sandbox.coordinator(accessTimeout: 5).coordinate(readingItemAt: otherMember) { _ in true }
        #expect(read)
        release.signal()
        #expect(reader.join())
    }

    @Test("two-item coordinations in opposite orders never deadlock", arguments: [false, true])
    func oppositeOrdersDoNotDeadlock(readingFirst: Bool) throws {
        let sandbox = try CoordinationSandbox()
        let a = try sandbox.file("a.txt")
        let b = try sandbox.file("b.txt")
        let failures = Shared<[String]>([])
        let completed = Atomic<Int>(0)
        func run(_ first: URL, _ second: URL) -> TestThread {
            TestThread {
                let coordinator = sandbox.coordinator(accessTimeout: 20)
                for _ in 0..<150 {
                    do {
                        if readingFirst {
                            try coordinator.coordinate(readingItemAt: first, writingItemAt: second) { _, _ in
                                completed.add(1, ordering: .relaxed)
                            }
                        } else {
                            try coordinator.coordinate(writingItemAt: first, writingItemAt: second) { _, _ in
                                completed.add(1, ordering: .relaxed)
                            }
                        }
                    } catch {
                        failures.update { $0.append("\(error)") }
                    }
                }
            }
        }
        let threads = [run(a, b), run(b, a), run(a, b), run(b, a)]
        for thread in threads { #expect(thread.join(timeout: 120)) }
        #expect(failures.current.isEmpty)
        #expect(completed.load(ordering: .relaxed) == 600)
    }

    @Test("nested coordination on one thread: re-entry is allowed, a write inside a read is diagnosed")
    func nestedCoordination() throws {
        let sandbox = try CoordinationSandbox()
        let file = try sandbox.file("nested.txt")
        let outer = sandbox.coordinator()
        let inner = sandbox.coordinator(accessTimeout: 5)
        let readInRead = try outer.coordinate(readingItemAt: file) { _ in
            try inner.coordinate(readingItemAt: file) { url in try String(contentsOf: url, encoding: .utf8) }
        }
        #expect(readInRead == "initial")
        try outer.coordinate(writingItemAt: file) { _ in
            let inside = try inner.coordinate(readingItemAt: file) { _ in true }
            #expect(inside)
            try inner.coordinate(writingItemAt: file) { url in try Data("nested write".utf8).write(to: url) }
        }
        #expect(try String(contentsOf: file, encoding: .utf8) == "nested write")

        try outer.coordinate(readingItemAt: file) { _ in
            let error = #expect(throws: FileCoordinationError.self) {
                try inner.coordinate(writingItemAt: file) { _ in Issue.record("write ran inside a read") }
            }
            #expect(error?.code == .wouldDeadlock)
            #expect(error?.message.contains(file.path) == true)
        }
        // Nothing stayed locked.
        let after = try sandbox.coordinator(accessTimeout: 2).coordinate(writingItemAt: file) { _ in true }
        #expect(after)
    }

    @Test("cancel() ends a waiting coordination with .cancelled")
    func cancelEndsWaiting() throws {
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
        let waiting = sandbox.coordinator(accessTimeout: 60)
        let outcome = Shared<FileCoordinationError.Code?>(nil)
        let ran = Shared(false)
        let waiter = TestThread {
            do {
                try waiting.coordinate(readingItemAt: file) { _ in ran.update { $0 = true } }
            } catch {
                outcome.update { $0 = coordinationCode(error) }
            }
        }
        #expect(
            eventually {
                waiting.cancel(); return outcome.current != nil
            })
        #expect(waiter.join())
        #expect(outcome.current == .cancelled)
        #expect(!ran.current)
        release.signal()
        #expect(holder.join())
    }

    @Test("the error-pointer form reports an NSError and does not run the accessor")
    func errorPointerForm() throws {
        let sandbox = try CoordinationSandbox()
        var error: NSError?
        var ran = false
        sandbox.coordinator().coordinate(
            readingItemAt: URL(string: "https://example.com/file")!, options: [], error: &error
        ) { _ in ran = true }
        #expect(!ran)
        #expect(error?.domain == "DocumentKit.FileCoordinationError")
        #expect(error?.code == FileCoordinationError.Code.invalidURL.rawValue)
        #expect(error?.localizedDescription.contains("not a file URL") == true)

        let file = try sandbox.file("ok.txt")
        var none: NSError?
        sandbox.coordinator().coordinate(writingItemAt: file, options: .forReplacing, error: &none) { url in
            ran = true
        }
        #expect(ran)
        #expect(none == nil)
    }

    @Test("intents: the accessor runs on the given queue holding access; the async form returns its value")
    func intents() async throws {
        let sandbox = try CoordinationSandbox()
        let source = try sandbox.file("source.txt", "from source")
        let destination = sandbox.url("destination.txt")
        let queue = OperationQueue()
        queue.name = "intent-test"
        let reading = FileAccessIntent.readingIntent(with: source)
        let writing = FileAccessIntent.writingIntent(with: destination, options: .forReplacing)
        let result = Shared<String?>(nil)
        sandbox.coordinator().coordinate(with: [reading, writing], queue: queue) { error in
            let onQueue = OperationQueue.current === queue
            if let error {
                result.update { $0 = "error \(error)" }
                return
            }
            try? FileManager.default.copyItem(at: reading.url, to: writing.url)
            result.update { $0 = onQueue ? "copied" : "wrong queue" }
        }
        #expect(eventually { result.current != nil })
        #expect(result.current == "copied")
        #expect(try String(contentsOf: destination, encoding: .utf8) == "from source")

        let text = try await sandbox.coordinator().coordinate(with: [.readingIntent(with: destination)]) {
            try String(contentsOf: destination, encoding: .utf8)
        }
        #expect(text == "from source")

        // While another thread writes, an asynchronous read with a short timeout fails and its accessor never runs.
        let release = DispatchSemaphore(value: 0)
        let holding = Shared(false)
        let holder = TestThread {
            try? sandbox.coordinator().coordinate(writingItemAt: destination) { _ in
                holding.update { $0 = true }
                release.wait()
            }
        }
        #expect(eventually { holding.current })
        await #expect {
            try await sandbox.coordinator(accessTimeout: 0.3).coordinate(with: [.readingIntent(with: destination)]) {
                Issue.record("accessor ran without access")
            }
        } throws: { coordinationCode($0) == .timedOut }
        let failed = Shared<FileCoordinationError.Code?>(nil)
        sandbox.coordinator(accessTimeout: 0.3).coordinate(with: [.readingIntent(with: destination)], queue: queue) {
            failed.update { [code = coordinationCode($0)] in $0 = code ?? .io }
        }
        #expect(eventually { failed.current != nil })
        #expect(failed.current == .timedOut)
        release.signal()
        #expect(holder.join())
    }

    @Test("intents on the calling thread: many files read under one coordination, held up by a writer of any of them")
    func intentsTogether() throws {
        let sandbox = try CoordinationSandbox()
        let files = try (0..<3).map { try sandbox.file("Folder/\($0).txt", "text \($0)") }
        let intents = files.map { FileAccessIntent.readingIntent(with: $0) }
        let texts = try sandbox.coordinator().coordinate(with: intents) {
            try intents.map { try String(contentsOf: $0.url, encoding: .utf8) }
        }
        #expect(texts == ["text 0", "text 1", "text 2"])

        // While another thread writes the last file, the reading of all three times out and its accessor never runs.
        let release = DispatchSemaphore(value: 0)
        let holding = Shared(false)
        let holder = TestThread {
            try? sandbox.coordinator().coordinate(writingItemAt: files[2]) { _ in
                holding.update { $0 = true }
                release.wait()
            }
        }
        #expect(eventually { holding.current })
        #expect {
            try sandbox.coordinator(accessTimeout: 0.3).coordinate(with: intents) {
                Issue.record("accessor ran without access")
            }
        } throws: { coordinationCode($0) == .timedOut }
        release.signal()
        #expect(holder.join())
        #expect(try sandbox.coordinator().coordinate(with: intents) { true })
    }
}
