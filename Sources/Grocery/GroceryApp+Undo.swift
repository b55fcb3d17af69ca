import DocumentKit
import Foundation

extension GroceryApp {
    /// The device's journal of edits.
    var journal: EditJournal {
        get throws { try EditJournal(folder: supportFolder) }
    }

    /// What ``undo()`` would undo, as the undo manager names it ("Undo Rename"), or `nil`.
    public func undoTitle() throws -> String? { try journal.lastUndo.map { "Undo \($0.actionName)" } }

    /// What ``redo()`` would redo ("Redo Rename"), or `nil`.
    public func redoTitle() throws -> String? { try journal.lastRedo.map { "Redo \($0.actionName)" } }

    /// Undoes this device's last edit through the item document's undo manager: the edit is registered with the
    /// reopened document as its last undoable step, then undone, which marks the document changed and saves it.
    /// - Returns: What was undone ("Rename").
    /// - Throws: ``GroceryError/Code/nothingToUndo`` when there is nothing, or the item changed since (on another
    ///   device, say) — then nothing is changed.
    @discardableResult
    public func undo() async throws -> String {
        var journal = try journal
        guard let edit = journal.lastUndo else { throw GroceryError(.nothingToUndo, "there is nothing to undo") }
        let document = try await open(edit, expecting: edit.after, doing: "undo")
        let undoManager: UndoManager = document.undoManager
        undoManager.beginUndoGrouping()
        undoManager.registerUndo(withTarget: document) { $0.change(to: edit.before, actionName: edit.actionName) }
        undoManager.setActionName(edit.actionName)
        undoManager.endUndoGrouping()
        undoManager.undo()
        // The step registered here counted as a change, which its undo took back; the contents did change, though.
        if !document.hasUnsavedChanges { document.updateChangeCount(.done) }
        try await save(document)
        try journal.didUndo()
        return edit.actionName
    }

    /// Redoes the last undone edit (an edit made since forgets it, as an undo manager does).
    /// - Returns: What was redone.
    @discardableResult
    public func redo() async throws -> String {
        var journal = try journal
        guard let edit = journal.lastRedo else { throw GroceryError(.nothingToUndo, "there is nothing to redo") }
        let document = try await open(edit, expecting: edit.before, doing: "redo")
        document.change(to: edit.after, actionName: edit.actionName)
        try await save(document)
        try journal.didRedo()
        return edit.actionName
    }

    /// Opens the document `edit` changed, checking it still holds `expected`.
    private func open(
        _ edit: EditJournal.Edit, expecting expected: GroceryItemDocument.Contents, doing verb: String
    ) async throws -> GroceryItemDocument {
        let entry = try await find(edit.fileName)
        let document = try await open(entry)
        guard document.contents == expected else {
            try? await document.closeDocument()
            throw GroceryError(
                .nothingToUndo,
                "cannot \(verb) \(edit.actionName): \(document.name) has changed since (perhaps on another device)")
        }
        return document
    }
}
