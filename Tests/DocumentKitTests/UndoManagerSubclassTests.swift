import DocumentKit
import Testing

/// An undo manager that counts the undos and redos asked of it and names its menu items itself.
@MainActor
final class CountingUndoManager: UndoManager {
    private(set) var undoCalls = 0
    private(set) var redoCalls = 0

    override func undo() {
        undoCalls += 1
        super.undo()
    }

    override func redo() {
        redoCalls += 1
        super.redo()
    }

    override var undoActionName: String {
        let name = super.undoActionName
        return name.isEmpty ? "" : "\(name) (\(undoCalls) undone so far)"
    }
}

@Suite("UndoManager: subclasses")
@MainActor
struct UndoManagerSubclassTests {
    @Test func overridesOfUndoAndRedoRunAndSuperStillUndoesAndRedoes() {
        let counting = CountingUndoManager()
        // Called through the base type, as a document calls its undo manager.
        let manager: UndoManager = counting
        let model = UndoTestText(undoManager: manager)
        manager.group { model.setText("a") }
        manager.group { model.setText("ab") }

        manager.undo()
        #expect(counting.undoCalls == 1)
        #expect(model.text == "a")
        manager.undo()
        #expect(counting.undoCalls == 2)
        #expect(model.text == "")
        #expect(!manager.canUndo)

        manager.redo()
        #expect(counting.redoCalls == 1)
        #expect(model.text == "a")
        manager.redo()
        #expect(counting.redoCalls == 2)
        #expect(model.text == "ab")
        #expect(!manager.canRedo)
        #expect(counting.undoCalls == 2)
    }

    @Test func superUndoClosesTheOpenGroupAsTheBaseClassDoes() {
        let counting = CountingUndoManager()
        let model = UndoTestText(undoManager: counting)
        counting.beginUndoGrouping()
        model.setText("a")
        #expect(counting.groupingLevel == 1)

        counting.undo()
        #expect(counting.undoCalls == 1)
        #expect(counting.groupingLevel == 0)
        #expect(model.text == "")
        #expect(counting.canRedo)
    }

    @Test func anOverriddenActionNameReachesTheMenuItemTitle() {
        let counting = CountingUndoManager()
        let model = UndoTestText(undoManager: counting)
        counting.group { model.setText("a", actionName: "Typing") }
        counting.group { model.setText("ab", actionName: "Typing") }
        #expect(counting.undoMenuItemTitle == "Undo Typing (0 undone so far)")
        counting.undo()
        #expect(counting.undoMenuItemTitle == "Undo Typing (1 undone so far)")
        #expect(counting.redoMenuItemTitle == "Redo Typing")
    }
}
