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
        guard journal.canUndo else { throw GroceryError(.nothingToUndo, "there is nothing to undo") }
        let (document, edit) = try await open(journal.lastUndo, expecting: \.after, doing: "undo", in: &journal)
        let undoManager: UndoManager = document.undoManager
        undoManager.beginUndoGrouping()
        let (before, actionName) = (edit.before, edit.actionName)
        undoManager.registerUndo(withTarget: document) { $0.change(to: before, actionName: actionName) }
        undoManager.setActionName(actionName)
        undoManager.endUndoGrouping()
        undoManager.undo()
        // The step registered here counted as a change, which its undo took back; the contents did change, though.
        if !document.hasUnsavedChanges { document.updateChangeCount(.done) }
        try await save(document)
        try journal.didUndo()
        return actionName
    }

    /// Redoes the last undone edit (an edit made since forgets it, as an undo manager does).
    /// - Returns: What was redone.
    @discardableResult
    public func redo() async throws -> String {
        var journal = try journal
        guard journal.canRedo else { throw GroceryError(.nothingToUndo, "there is nothing to redo") }
        let (document, edit) = try await open(journal.lastRedo, expecting: \.before, doing: "redo", in: &journal)
        document.change(to: edit.after, actionName: edit.actionName)
        try await save(document)
        try journal.didRedo()
        return edit.actionName
    }

    /// Opens the document `edit` changed, checking it still holds what `expected` picks from the edit. A step that
    /// can no longer be taken — its item gone, or changed since (on another device, say), or its record unreadable
    /// — is dropped from the journal, so that the steps before it stay reachable; the error says so.
    private func open(
        _ edit: EditJournal.Edit?, expecting expected: KeyPath<EditJournal.Edit, GroceryItemDocument.Contents>,
        doing verb: String, in journal: inout EditJournal
    ) async throws -> (GroceryItemDocument, EditJournal.Edit) {
        let redo = verb == "redo"
        guard let edit else {
            try journal.dropLast(redo: redo)
            throw GroceryError(.nothingToUndo, "the last step to \(verb) could not be read; it is dropped")
        }
        let entry: GroceryEntry
        do {
            entry = try await find(edit.fileName)
        } catch let error as GroceryError where error.code == .noSuchItem {
            try journal.dropLast(redo: redo)
            throw GroceryError(
                .nothingToUndo,
                "cannot \(verb) \(edit.actionName): the item is gone (deleted, perhaps on another "
                    + "device); that step is dropped, run `grocery \(verb)` again for the one before")
        }
        let document = try await open(entry)
        guard document.contents == edit[keyPath: expected] else {
            try? await document.closeDocument()
            try journal.dropLast(redo: redo)
            throw GroceryError(
                .nothingToUndo,
                "cannot \(verb) \(edit.actionName): \(document.name) has changed since (perhaps on another device); "
                    + "that step is dropped, nothing was changed")
        }
        return (document, edit)
    }
}
