import DocumentKit
import Foundation

/// The scripted story of `ubiquity demo`: each step acts through the public API and reports what it observed.
@MainActor
struct DocumentDemo {
    let root: URL
    let narrator: Narrator

    func run() async throws {
        print("Ubiquity demo — documents that save themselves, in \(root.path)")
        let noteURL = root.appendingPathComponent("Shopping.txt")
        let note = DemoNote(fileURL: noteURL)
        note.autosaveDelay = .milliseconds(200)

        narrator.step(1, "Create a document")
        note.setText("milk")
        guard await note.save(to: noteURL, for: .forCreating) else { throw DemoFailure("could not create the note") }
        narrator.done("saved \(noteURL.lastPathComponent) (\(note.fileType ?? "?")): \"\(try read(noteURL))\"")

        narrator.step(2, "Edit it; autosave writes the change by itself")
        note.setText("milk, eggs")
        try await waitFor("the undo group to close") { note.hasUnsavedChanges }
        narrator.detail("unsaved changes: \(note.hasUnsavedChanges)")
        try await waitFor("the autosave") { !note.hasUnsavedChanges }
        try expect(read(noteURL), "milk, eggs", "the autosaved file")
        narrator.done("on disk after autosave: \"\(try read(noteURL))\"")

        narrator.step(3, "Undo through the document's undo manager")
        narrator.detail("menu reads \"\(note.undoManager.undoMenuItemTitle)\"")
        note.undoManager.undo()
        narrator.detail("unsaved changes: \(note.hasUnsavedChanges)")
        try await waitFor("the autosave of the undo") { !note.hasUnsavedChanges }
        try expect(read(noteURL), "milk", "the file after undo")
        narrator.done(
            "on disk after undo: \"\(try read(noteURL))\"; redo menu reads \"\(note.undoManager.redoMenuItemTitle)\"")

        narrator.step(4, "Another writer replaces the file; the open document reverts by itself")
        let reloadsBefore = note.reloads
        try FileCoordinator().coordinate(writingItemAt: noteURL, options: .forReplacing) { url in
            try Data("milk, eggs, bread (from another writer)".utf8).write(to: url, options: .atomic)
        }
        try await waitFor("the document to revert") { note.reloads > reloadsBefore }
        try expect(note.text, "milk, eggs, bread (from another writer)", "the reverted document")
        narrator.done("the document now reads \"\(note.text)\"")

        narrator.step(5, "Save a 100-page package, change one page, save again")
        let linked = try await incrementalPackageSave()
        guard linked == 99 else { throw DemoFailure("only \(linked) of 99 unchanged pages were hard-linked") }
        narrator.done("\(linked) of 99 unchanged pages were hard-linked from the previous save, not rewritten")

        narrator.step(6, "Close")
        note.setText("milk, eggs, bread, butter")
        guard await note.close() else { throw DemoFailure("closing failed") }
        try expect(read(noteURL), "milk, eggs, bread, butter", "the file after close")
        narrator.done("closing saved the last edit: \"\(try read(noteURL))\"; state is \(note.documentState)")
        print("\nAll steps done.")
    }

    private func incrementalPackageSave() async throws -> Int {
        DocumentTypeRegistry.default.register(
            DocumentType(
                identifier: "com.example.ubiquity-demo.album", conformsTo: [DocumentType.packageIdentifier],
                filenameExtensions: ["album"]))
        let url = root.appendingPathComponent("Photos.album")
        let album = DemoAlbum(fileURL: url)
        album.autosaveDelay = .seconds(3600)
        for page in 0..<100 { album.setPage("page-\(page).bin", to: Data(repeating: UInt8(page), count: 64 * 1024)) }
        guard await album.save(to: url, for: .forCreating) else { throw DemoFailure("could not create the album") }
        let before = try inodes(in: url)
        album.setPage("page-7.bin", to: Data(repeating: 0xFF, count: 64 * 1024))
        guard await album.save(to: url, for: .forOverwriting) else { throw DemoFailure("could not save the album") }
        let after = try inodes(in: url)
        _ = await album.close()
        return before.filter { $0.key != "page-7.bin" && after[$0.key] == $0.value }.count
    }

    private func inodes(in directory: URL) throws -> [String: UInt64] {
        var result: [String: UInt64] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let attributes = try FileManager.default.attributesOfItem(
                atPath: directory.appendingPathComponent(name).path)
            result[name] = attributes[.systemFileNumber] as? UInt64
        }
        return result
    }

    private func expect(_ actual: String, _ expected: String, _ what: String) throws {
        guard actual == expected else { throw DemoFailure("\(what) reads \"\(actual)\", expected \"\(expected)\"") }
    }

    private func read(_ url: URL) throws -> String {
        try String(contentsOf: url, encoding: .utf8)
    }

    private func waitFor(_ what: String, seconds: Double = 10, _ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { throw DemoFailure("gave up waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// A demo step that did not do what it should.
struct DemoFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
