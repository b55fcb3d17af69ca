import DocumentKit
import Foundation
import Testing

/// The README's code sample, compiled and run as written (inside a namespace, in a temporary directory).
enum ReadmeSample {
    // --- from README.md ---
    final class NoteDocument: Document {
        var text = ""

        override func contents(forType typeName: String) throws -> Any {
            Data(text.utf8)
        }

        override func load(fromContents contents: Any, ofType typeName: String?) throws {
            text = String(decoding: contents as? Data ?? Data(), as: UTF8.self)
        }
    }
    // --- end ---
}

@Suite("README sample")
@MainActor
struct ReadmeSampleTests {
    @Test("the README's document sample creates, edits and closes a note")
    func sample() async throws {
        let directory = try TemporaryDirectory()
        // As in the README, with the path moved into a temporary directory.
        let note = ReadmeSample.NoteDocument(fileURL: directory.file("Shopping.txt"))
        if await note.save(to: note.fileURL, for: .forCreating) {
            note.text = "milk, eggs"
            note.updateChangeCount(.done)  // autosaves after `note.autosaveDelay`
        }
        await note.close()  // saves what is unsaved
        #expect(try String(contentsOf: directory.file("Shopping.txt"), encoding: .utf8) == "milk, eggs")
    }
}
