import DocumentKit
import Foundation
import Testing
import UbiquityTestSupport

@Suite("Document life cycle")
@MainActor
struct DocumentLifecycleTests {
    @Test("create, edit, autosave, close, reopen")
    func createEditAutosaveCloseReopen() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("Shopping.txt")
        let document = NoteDocument(fileURL: url)
        document.autosaveDelay = .milliseconds(20)
        #expect(document.documentState == .closed)
        #expect(document.localizedName == "Shopping")
        #expect(document.fileType == "public.plain-text")

        document.text = "milk"
        #expect(await document.save(to: url, for: .forCreating))
        #expect(document.documentState == .normal)
        #expect(try String(contentsOf: url, encoding: .utf8) == "milk")
        #expect(document.fileModificationDate != nil)

        document.edit("milk, eggs")
        #expect(document.hasUnsavedChanges)
        await waitUntil("the edit is autosaved") { !document.hasUnsavedChanges }
        #expect(try String(contentsOf: url, encoding: .utf8) == "milk, eggs")

        document.edit("milk, eggs, bread")
        document.autosaveDelay = .seconds(3600)
        #expect(await document.close())
        #expect(document.documentState == .closed)
        #expect(try String(contentsOf: url, encoding: .utf8) == "milk, eggs, bread", "close saves what is unsaved")

        let reopened = NoteDocument(fileURL: url)
        #expect(await reopened.open())
        #expect(reopened.text == "milk, eggs, bread")
        #expect(reopened.loads == ["milk, eggs, bread"])
        #expect(!reopened.hasUnsavedChanges)
        #expect(await reopened.close())
    }

    @Test("opening a missing file fails with a clear error and leaves the document closed")
    func openMissingFile() async throws {
        let directory = try TemporaryDirectory()
        let document = NoteDocument(fileURL: directory.file("nothing.txt"))
        #expect(await document.open() == false)
        #expect(document.documentState == .closed)
        let error = try #require(document.handledErrors.first as? DocumentError)
        #expect(error.code == .fileNotFound)
        #expect(error.message.contains("nothing.txt"))
        await #expect(throws: DocumentError.self) { try await document.openDocument() }
    }

    @Test("a load that throws leaves the document closed")
    func unreadableFile() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("item.txt")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)  // a folder, not text
        let document = NoteDocument(fileURL: url)
        #expect(await document.open() == false)
        #expect(document.documentState == .closed)
        let error = try #require(document.handledErrors.first as? DocumentError)
        #expect(error.code == .readFailed)
    }

    @Test("saving for creating over an existing file fails and changes nothing")
    func createOverExisting() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("taken.txt")
        try Data("original".utf8).write(to: url)
        let document = NoteDocument(fileURL: url)
        document.text = "intruder"
        #expect(await document.save(to: url, for: .forCreating) == false)
        #expect(try String(contentsOf: url, encoding: .utf8) == "original")
        #expect(document.documentState.contains(.savingError))
        #expect((document.handledErrors.first as? DocumentError)?.code == .fileExists)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(leftovers == ["taken.txt"], "no temporary file is left behind")
    }

    @Test("savingError is set by a failed save and cleared by the next good one")
    func savingErrorClearedByGoodSave() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = NoteDocument(fileURL: url)
        document.autosaveDelay = .seconds(3600)
        #expect(await document.save(to: url, for: .forCreating))
        let recorder = StateRecorder(document)

        let locked = directory.file("locked")
        try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: false)
        document.edit("changed")
        #expect(await document.save(to: locked.appendingPathComponent("missing/x.txt"), for: .forOverwriting) == false)
        #expect(document.documentState == .savingError)
        #expect(document.hasUnsavedChanges, "a failed save leaves the changes unsaved")

        #expect(await document.save(to: url, for: .forOverwriting))
        #expect(document.documentState == .normal)
        #expect(recorder.states == [.savingError, .normal])
        #expect(try String(contentsOf: url, encoding: .utf8) == "changed")
    }

    @Test("revert discards unsaved changes, clears the undo stack and disables editing while it runs")
    func revert() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        try Data("on disk".utf8).write(to: url)
        let document = NoteDocument(fileURL: url)
        document.autosaveDelay = .seconds(3600)
        #expect(await document.open())
        let recorder = StateRecorder(document)

        document.undoManager.registerUndo(withTarget: document) { $0.text = "on disk" }
        document.edit("unsaved")
        #expect(document.undoManager.canUndo)
        #expect(await document.revert(toContentsOf: url))
        #expect(document.text == "on disk")
        #expect(!document.hasUnsavedChanges)
        #expect(!document.undoManager.canUndo)
        #expect(recorder.states == [.editingDisabled, .normal])
        #expect(document.editingDisabledCalls == 1 && document.editingEnabledCalls == 1)
        await document.close()
    }

    @Test("states and notifications arrive in order through both channels")
    func stateAnnouncements() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        try Data("x".utf8).write(to: url)
        let document = NoteDocument(fileURL: url)
        let recorder = StateRecorder(document)
        let updates = document.stateUpdates
        let collected = Task { @MainActor in
            var states: [Document.State] = []
            for await state in updates {
                states.append(state)
                if states.count == 3 { break }
            }
            return states
        }
        #expect(await document.open())
        document.edit("y")
        #expect(await document.close())
        #expect(recorder.states == [.normal, .editingDisabled, .closed])
        #expect(await finished(collected) == [.normal, .editingDisabled, .closed])
    }

    @Test("completion-handler forms call back on the main actor")
    func completionHandlers() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = NoteDocument(fileURL: url)
        document.text = "hello"
        let created: Bool = await withCheckedContinuation { continuation in
            document.save(to: url, for: .forCreating) { success in
                MainActor.preconditionIsolated()
                continuation.resume(returning: success)
            }
        }
        #expect(created)
        let closed: Bool = await withCheckedContinuation { continuation in
            document.close { continuation.resume(returning: $0) }
        }
        #expect(closed)
        let reopened = NoteDocument(fileURL: url)
        let opened: Bool = await withCheckedContinuation { continuation in
            reopened.open { continuation.resume(returning: $0) }
        }
        #expect(opened && reopened.text == "hello")
        await reopened.close()
    }

    @Test("performAsynchronousFileAccess runs blocks in order, after pending saves, off the main thread")
    func fileAccessOrdering() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = NoteDocument(fileURL: url)
        document.text = "first"
        let log = LockedLog()
        let saved = LockedLog()
        document.save(to: url, for: .forCreating) { saved.append("saved \($0)") }
        document.performAsynchronousFileAccess {
            log.append(Thread.isMainThread ? "main" : "background")
            log.append((try? String(contentsOf: url, encoding: .utf8)) ?? "missing")
        }
        document.performAsynchronousFileAccess { log.append("second block") }
        await waitUntil("both blocks ran") { log.entries.count == 3 && saved.entries.count == 1 }
        #expect(saved.entries == ["saved true"])
        #expect(log.entries == ["background", "first", "second block"])
        await document.close()
    }
}

/// A thread-safe list of strings for callbacks that run on other threads.
final class LockedLog: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var storage: [String] = []

    func append(_ entry: String) {
        lock.lock()
        storage.append(entry)
        lock.unlock()
    }

    var entries: [String] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}
