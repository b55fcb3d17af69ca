import DocumentKit
import Foundation
import Testing
import UbiquityTestSupport

@Suite("Document change tracking")
@MainActor
struct DocumentChangeTrackingTests {
    @Test("an edit made while a save is in flight stays unsaved, and the next save writes it")
    func editDuringInFlightSave() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = NoteDocument(fileURL: url)
        document.autosaveDelay = .seconds(3600)
        document.text = "v1"
        #expect(await document.save(to: url, for: .forCreating))

        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        document.writeGate = gate
        document.writeStarted = started
        document.edit("v2")
        let save = Task { await document.save(to: url, for: .forOverwriting) }
        // Wait off the main actor until the background write has its snapshot and is blocked.
        await Task.detached { started.wait() }.value
        document.edit("v3")  // the user types while "v2" is being written
        gate.signal()
        #expect(await save.value)
        document.writeGate = nil
        #expect(try String(contentsOf: url, encoding: .utf8) == "v2", "the save wrote its snapshot")
        #expect(document.hasUnsavedChanges, "the edit made during the save is not lost")

        #expect(await document.autosave())
        #expect(try String(contentsOf: url, encoding: .utf8) == "v3")
        #expect(!document.hasUnsavedChanges)
        await document.close()
    }

    @Test("an autosave queued behind a save that wrote everything writes nothing over another writer's later save")
    func queuedAutosaveOfACleanDocument() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = NoteDocument(fileURL: url)
        document.autosaveDelay = .seconds(3600)
        document.text = "v1"
        #expect(await document.save(to: url, for: .forCreating))

        document.edit("v2")
        // Two autosaves asked for while the document is dirty (a timer's and a close's, say), with another file
        // access between them in which another writer replaces the file.
        let answers: [Bool] = await withCheckedContinuation { continuation in
            let first = AnswerBox()
            document.autosave { first.value = $0 }
            document.performAsynchronousFileAccess {
                try? Data("theirs".utf8).write(to: url, options: .atomic)
            }
            document.autosave { continuation.resume(returning: [first.value, $0]) }
        }
        #expect(answers == [true, true], "the second found nothing left to save")
        #expect(try String(contentsOf: url, encoding: .utf8) == "theirs", "the other writer's save is kept")
        #expect(!document.hasUnsavedChanges)
        await document.close()
    }

    @Test("an edit is autosaved once the delay has passed on the document's clock, and not before")
    func autosaveWaitsOnItsClock() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = NoteDocument(fileURL: url)
        let clock = ManualClock()
        document.clock = clock
        document.autosaveDelay = .seconds(30)
        document.text = "v1"
        #expect(await document.save(to: url, for: .forCreating))

        document.edit("v2")
        #expect(await clock.waitForSleepers(1), "the autosave timer is set")
        clock.advance(by: .seconds(29))
        #expect(document.hasUnsavedChanges, "29 of 30 seconds: not yet")
        #expect(try String(contentsOf: url, encoding: .utf8) == "v1")
        clock.advance(by: .seconds(1))
        await waitUntil("the edit is autosaved") { !document.hasUnsavedChanges }
        #expect(try String(contentsOf: url, encoding: .utf8) == "v2")
        await document.close()
    }

    @Test("change count: done, undone, redone and cleared; undoing back to the saved state is clean")
    func changeKinds() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = NoteDocument(fileURL: url)
        document.autosaveDelay = .seconds(3600)
        #expect(await document.save(to: url, for: .forCreating))
        #expect(!document.hasUnsavedChanges)
        document.updateChangeCount(.done)
        #expect(document.hasUnsavedChanges)
        document.updateChangeCount(.undone)
        #expect(!document.hasUnsavedChanges, "undoing the only change returns to the saved state")
        document.updateChangeCount(.redone)
        #expect(document.hasUnsavedChanges)
        document.updateChangeCount(.cleared)
        #expect(!document.hasUnsavedChanges)

        document.updateChangeCount(.done)
        #expect(await document.autosave())
        #expect(!document.hasUnsavedChanges)
        document.updateChangeCount(.undone)
        #expect(document.hasUnsavedChanges, "undoing past the saved state is a change to save")
        await document.close()
    }

    @Test("the undo manager drives the change count, and undoable edits autosave by themselves")
    func undoManagerDrivesChangeCount() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = NoteDocument(fileURL: url)
        document.autosaveDelay = .seconds(3600)
        document.text = "a"
        #expect(await document.save(to: url, for: .forCreating))

        document.setTextUndoably("ab")
        #expect(!document.hasUnsavedChanges, "the group closes at the end of this turn of the main actor")
        await waitUntil("the automatic undo group closes") { document.hasUnsavedChanges }
        #expect(await document.autosave())
        #expect(try String(contentsOf: url, encoding: .utf8) == "ab")

        document.undoManager.undo()
        #expect(document.text == "a")
        #expect(document.hasUnsavedChanges, "an undo is a change")
        document.undoManager.redo()
        #expect(document.text == "ab")
        #expect(!document.hasUnsavedChanges, "redo back to the saved state is clean")

        document.autosaveDelay = .milliseconds(20)
        document.undoManager.undo()
        await waitUntil("the undo is autosaved") { !document.hasUnsavedChanges }
        #expect(try String(contentsOf: url, encoding: .utf8) == "a")
        await document.close()
    }

    @Test("a package document saves incrementally: unchanged members keep their inode")
    func incrementalPackageSave() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("Item_1.item")
        DocumentTypeRegistry.default.register(
            DocumentType(
                identifier: "com.example.item", conformsTo: [DocumentType.packageIdentifier],
                filenameExtensions: ["item"]))
        let document = ItemDocument(fileURL: url)
        document.autosaveDelay = .seconds(3600)
        document.name = "Milk"
        document.image = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        #expect(await document.save(to: url, for: .forCreating))
        #expect(document.fileType == "com.example.item")
        let imageInode = try inode(url.appendingPathComponent("image.png"))
        let nameInode = try inode(url.appendingPathComponent("name.txt"))

        document.name = "Oat milk"
        document.updateChangeCount(.done)
        #expect(await document.autosave())
        #expect(try inode(url.appendingPathComponent("image.png")) == imageInode, "the image was hard-linked")
        #expect(try inode(url.appendingPathComponent("name.txt")) != nameInode)
        #expect(try String(contentsOf: url.appendingPathComponent("name.txt"), encoding: .utf8) == "Oat milk")

        document.name = "Soy milk"
        document.updateChangeCount(.done)
        #expect(await document.autosave())
        #expect(try inode(url.appendingPathComponent("image.png")) == imageInode, "and again on the next save")
        await document.close()

        let reopened = ItemDocument(fileURL: url)
        #expect(await reopened.open())
        #expect(reopened.name == "Soy milk")
        #expect(reopened.image == document.image)
        await reopened.close()
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(names == ["Item_1.item"], "no temporary siblings are left")
    }

    private func inode(_ url: URL) throws -> UInt64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return try #require(attributes[.systemFileNumber] as? UInt64)
    }
}

extension NoteDocument {
    /// Sets the text, registering the inverse with the undo manager (which makes undo register redo, and so on).
    func setTextUndoably(_ newText: String) {
        let old = text
        undoManager.registerUndo(withTarget: self) { $0.setTextUndoably(old) }
        text = newText
    }
}

@Suite("Document undo edits and closing")
@MainActor
struct DocumentUndoCloseTests {
    @Test("an undoable edit made in the same turn as close is saved by the close")
    func closeInSameTurnAsUndoableEdit() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = NoteDocument(fileURL: url)
        document.autosaveDelay = .seconds(3600)
        document.text = "a"
        #expect(await document.save(to: url, for: .forCreating))
        document.setTextUndoably("a, b")
        #expect(await document.close())
        #expect(try String(contentsOf: url, encoding: .utf8) == "a, b")
    }
}

/// The answer of a completion handler, kept on the main actor until another handler reads it.
@MainActor
private final class AnswerBox {
    var value = false
}
