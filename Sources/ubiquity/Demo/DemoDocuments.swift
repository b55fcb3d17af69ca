import DocumentKit
import Foundation

/// The demo's flat-file document: a note whose edits are undoable.
@MainActor
final class DemoNote: Document {
    private(set) var text = ""
    private(set) var reloads = 0

    override func contents(forType typeName: String) throws -> Any { Data(text.utf8) }

    override func load(fromContents contents: Any, ofType typeName: String?) throws {
        text = String(decoding: contents as? Data ?? Data(), as: UTF8.self)
        reloads += 1
    }

    /// Replaces the text, registering the inverse so the edit can be undone (and redone).
    func setText(_ newText: String, actionName: String = "Typing") {
        let old = text
        undoManager.registerUndo(withTarget: self) { $0.setText(old, actionName: actionName) }
        undoManager.setActionName(actionName)
        text = newText
    }
}

/// The demo's package document: many members, of which an edit changes one.
@MainActor
final class DemoAlbum: Document {
    private var root = FileWrapper(directoryWithFileWrappers: [:])

    override func contents(forType typeName: String) throws -> Any { root }

    override func load(fromContents contents: Any, ofType typeName: String?) throws {
        if let wrapper = contents as? FileWrapper { root = wrapper }
    }

    /// Sets one member's bytes, replacing its wrapper (the others stay as they were read or written).
    func setPage(_ name: String, to data: Data) {
        if let old = root.fileWrappers?[name] { root.removeFileWrapper(old) }
        root.addRegularFile(withContents: data, preferredFilename: name)
        updateChangeCount(.done)
    }
}
