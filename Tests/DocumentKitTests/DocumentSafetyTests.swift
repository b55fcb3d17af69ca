import DocumentKit
import Foundation
import Testing
import UbiquityTestSupport

@Suite("Document safety and porting")
@MainActor
struct DocumentSafetyTests {
    @Test("saving over a folder is refused with a typed error and the folder is untouched")
    func saveOverFolderRefused() async throws {
        let directory = try TemporaryDirectory()
        let folder = directory.file("Documents")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        try Data("precious".utf8).write(to: folder.appendingPathComponent("thesis.txt"))

        let note = NoteDocument(fileURL: directory.file("note.txt"))
        note.text = "oops"
        #expect(await note.save(to: folder, for: .forOverwriting) == false)
        #expect((note.handledErrors.last as? DocumentError)?.code == .kindMismatch)
        #expect(
            try String(contentsOf: folder.appendingPathComponent("thesis.txt"), encoding: .utf8) == "precious")

        let item = ItemDocument(fileURL: directory.file("other.item"))
        item.name = "Milk"
        #expect(await item.save(to: folder, for: .forOverwriting) == false, "a package over a plain folder too")
        #expect(
            try String(contentsOf: folder.appendingPathComponent("thesis.txt"), encoding: .utf8) == "precious")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted()
        #expect(names == ["Documents"], "no temporary item is left behind")
    }

    @Test("a save keeps the file's permissions")
    func savesKeepPermissions() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("diary.txt")
        let diary = NoteDocument(fileURL: url)
        diary.autosaveDelay = .seconds(3600)
        diary.text = "day 1"
        #expect(await diary.save(to: url, for: .forCreating))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        diary.edit("day 2")
        #expect(await diary.autosave())
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try String(contentsOf: url, encoding: .utf8) == "day 2")
        await diary.close()
    }

    @Test("UIDocument-style overrides compile and see every save, including autosave and close")
    func completionOverridesSeeEverySave() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = CountingDocument(fileURL: url)
        #expect(document.initialised)
        document.autosaveDelay = .milliseconds(10)
        #expect(await document.save(to: url, for: .forCreating))
        document.body = "edited"
        document.updateChangeCount(.done)
        await waitUntil("the autosave runs") { !document.hasUnsavedChanges }
        document.body = "closing"
        document.updateChangeCount(.done)
        #expect(await document.close())
        #expect(document.saveCalls == 3, "creating, autosave and the save in close all go through the override")
        #expect(document.autosaveCalls >= 2)
        #expect(try String(contentsOf: url, encoding: .utf8) == "closing")
    }

    @Test("a failed autosave is retried without another edit")
    func failedAutosaveIsRetried() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = CountingDocument(fileURL: url)
        document.autosaveDelay = .milliseconds(10)
        #expect(await document.save(to: url, for: .forCreating))
        document.failingSnapshots = 1
        document.body = "v2"
        document.updateChangeCount(.done)
        await waitUntil("the autosave fails") { document.documentState.contains(.savingError) }
        await waitUntil("a retry saves without another edit") { !document.hasUnsavedChanges }
        #expect(try String(contentsOf: url, encoding: .utf8) == "v2")
        #expect(!document.documentState.contains(.savingError))
        await document.close()
    }

    @Test("closeDocument() saves an undoable edit made in the same turn")
    func throwingCloseSavesSameTurnEdit() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = NoteDocument(fileURL: url)
        document.autosaveDelay = .seconds(3600)
        #expect(await document.save(to: url, for: .forCreating))
        document.setTextUndoably("typed just before closing")
        try await document.closeDocument()
        #expect(try String(contentsOf: url, encoding: .utf8) == "typed just before closing")
    }

    @Test("close then open, asked for back to back, end with the document open")
    func closeThenOpenInCallOrder() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = NoteDocument(fileURL: url)
        document.autosaveDelay = .seconds(3600)
        document.text = "kept"
        #expect(await document.save(to: url, for: .forCreating))
        let outcomes = LockedLog()
        document.close { outcomes.append("closed \($0)") }
        document.open { outcomes.append("opened \($0)") }
        await waitUntil("both answered") { outcomes.entries.count == 2 }
        #expect(outcomes.entries == ["closed true", "opened true"])
        #expect(document.documentState == .normal)
        #expect(document.text == "kept")
        await document.close()
    }

    @Test("a document whose file was deleted saves again once it is reopened on a recreated file")
    func reopenAfterDeletion() async throws {
        let directory = try TemporaryDirectory()
        let url = directory.file("note.txt")
        let document = NoteDocument(fileURL: url)
        document.autosaveDelay = .seconds(3600)
        document.text = "first life"
        #expect(await document.save(to: url, for: .forCreating))
        // Off the main actor: the document answers the deletion notice there (as with Apple's API, a coordinated
        // write on the main thread would wait for a presenter that needs that thread).
        try await offPool {
            try FileCoordinator().coordinate(writingItemAt: url, options: .forDeleting) { url in
                try FileManager.default.removeItem(at: url)
            }
        }
        await waitUntil("the deletion closes the document") { document.documentState.contains(.closed) }
        try Data("second life".utf8).write(to: url)
        #expect(await document.open())
        #expect(document.text == "second life")
        document.edit("second life, edited")
        #expect(await document.autosave())
        #expect(try String(contentsOf: url, encoding: .utf8) == "second life, edited")
        await document.close()
    }
}

/// A UIDocument-style subclass: overrides the designated initialiser and the completion-handler save.
@MainActor
final class CountingDocument: Document {
    var body = "new"
    var initialised = false
    var saveCalls = 0
    var autosaveCalls = 0

    override init(fileURL url: URL) {
        super.init(fileURL: url)
        initialised = true
    }

    var failingSnapshots = 0

    override func contents(forType typeName: String) throws -> Any {
        if failingSnapshots > 0 {
            failingSnapshots -= 1
            throw TestFailure("the snapshot failed")
        }
        return Data(body.utf8)
    }

    override func save(
        to url: URL,
        for saveOperation: SaveOperation,
        completionHandler: (@MainActor @Sendable (Bool) -> Void)? = nil
    ) {
        saveCalls += 1
        super.save(to: url, for: saveOperation, completionHandler: completionHandler)
    }

    override func autosave(completionHandler: (@MainActor @Sendable (Bool) -> Void)? = nil) {
        autosaveCalls += 1
        super.autosave(completionHandler: completionHandler)
    }
}
