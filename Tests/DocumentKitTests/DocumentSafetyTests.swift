import DocumentKit
import Foundation
import Testing

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
        await waitUntil("a retry saves without another edit", seconds: 20) { !document.hasUnsavedChanges }
        #expect(try String(contentsOf: url, encoding: .utf8) == "v2")
        #expect(!document.documentState.contains(.savingError))
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
