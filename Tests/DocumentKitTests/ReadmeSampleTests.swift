import DocumentKit
import Foundation
import Testing

/// The smallest document a developer writes (the README's sample before it grew a query, which UbiquityKitTests
/// now checks against the README), compiled and run in a temporary directory.
enum ReadmeSample {
    final class NoteDocument: Document {
        var text = ""

        override func contents(forType typeName: String) throws -> Any {
            Data(text.utf8)
        }

        override func load(fromContents contents: Any, ofType typeName: String?) throws {
            text = String(decoding: contents as? Data ?? Data(), as: UTF8.self)
        }
    }
}

@Suite("A minimal document")
@MainActor
struct ReadmeSampleTests {
    @Test("a minimal document creates, edits and closes a note, and the file holds the edit")
    func sample() async throws {
        let directory = try TemporaryDirectory()
        let note = ReadmeSample.NoteDocument(fileURL: directory.file("Shopping.txt"))
        if await note.save(to: note.fileURL, for: .forCreating) {
            note.text = "milk, eggs"
            note.updateChangeCount(.done)  // autosaves after `note.autosaveDelay`
        }
        await note.close()  // saves what is unsaved
        #expect(try String(contentsOf: directory.file("Shopping.txt"), encoding: .utf8) == "milk, eggs")
    }
}
