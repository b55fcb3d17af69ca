import DocumentKit
import Testing

@Suite("UndoManager: action names and discardable steps")
@MainActor
struct UndoManagerActionNameTests {
    @Test func menuTitlesFollowTheActionNames() {
        let manager = UndoManager()
        let model = UndoTestText(undoManager: manager)
        #expect(manager.undoMenuItemTitle == "Undo")
        #expect(manager.redoMenuItemTitle == "Redo")

        manager.group { model.setText("a", actionName: "Typing") }
        manager.group { model.setText("b", actionName: "Paste") }
        #expect(manager.undoActionName == "Paste")
        #expect(manager.undoMenuItemTitle == "Undo Paste")

        manager.undo()
        #expect(manager.undoMenuItemTitle == "Undo Typing")
        #expect(manager.redoActionName == "Paste")
        #expect(manager.redoMenuItemTitle == "Redo Paste")

        manager.redo()
        #expect(manager.undoMenuItemTitle == "Undo Paste")
        #expect(manager.redoMenuItemTitle == "Redo")
    }

    @Test func theNameOfTheOpenGroupIsShownBeforeItCloses() {
        let manager = UndoManager()
        let model = UndoTestText(undoManager: manager)
        model.setText("a", actionName: "Bold")
        #expect(manager.undoMenuItemTitle == "Undo Bold")
        manager.undo()
        #expect(manager.redoMenuItemTitle == "Redo Bold")
    }

    @Test func anUndoneStepPassesItsNameToItsRedoStep() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.group {
            counter.add(1)
            manager.setActionName("Increment")
        }
        manager.undo()
        #expect(manager.redoActionName == "Increment", "the handler set no name, the undone step's is kept")
        manager.redo()
        #expect(manager.undoActionName == "Increment")
    }

    @Test func anEmptyNameRemovesTheName() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.group {
            counter.add(1)
            manager.setActionName("Increment")
            manager.setActionName("")
        }
        #expect(manager.undoActionName == "")
        #expect(manager.undoMenuItemTitle == "Undo")
    }

    @Test func aNameSetAfterTheGroupClosedNamesTheLastStep() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.group { counter.add(1) }
        manager.setActionName("Late")
        #expect(manager.undoMenuItemTitle == "Undo Late")
    }

    @Test func menuTitleFormatting() {
        let manager = UndoManager()
        #expect(manager.undoMenuTitle(forUndoActionName: "") == "Undo")
        #expect(manager.undoMenuTitle(forUndoActionName: "Typing") == "Undo Typing")
        #expect(manager.redoMenuTitle(forUndoActionName: "") == "Redo")
        #expect(manager.redoMenuTitle(forUndoActionName: "Typing") == "Redo Typing")
    }

    @Test func subclassesLocaliseTheMenuTitles() {
        final class FrenchUndoManager: UndoManager {
            override func undoMenuTitle(forUndoActionName actionName: String) -> String {
                actionName.isEmpty ? "Annuler" : "Annuler \(actionName)"
            }
        }
        let manager = FrenchUndoManager()
        let model = UndoTestText(undoManager: manager)
        manager.group { model.setText("a", actionName: "la saisie") }
        #expect(manager.undoMenuItemTitle == "Annuler la saisie")
    }

    @Test func discardableFlagsFollowTheSteps() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.group { counter.add(1) }
        #expect(!manager.undoActionIsDiscardable)

        manager.group {
            counter.add(2)
            manager.setActionIsDiscardable(true)
        }
        #expect(manager.undoActionIsDiscardable)

        manager.undo()
        #expect(manager.redoActionIsDiscardable, "the redo step inherits the flag")
        #expect(!manager.undoActionIsDiscardable)
        manager.redo()
        #expect(manager.undoActionIsDiscardable)
        #expect(!manager.redoActionIsDiscardable)
    }

    @Test func aGroupMadeOnlyOfDiscardableGroupsIsDiscardable() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.group {
            manager.group {
                counter.add(1)
                manager.setActionIsDiscardable(true)
            }
        }
        #expect(manager.undoActionIsDiscardable)

        manager.group {
            manager.group {
                counter.add(1)
                manager.setActionIsDiscardable(true)
            }
            counter.add(2)
        }
        #expect(!manager.undoActionIsDiscardable, "an action outside the discardable group is not discardable")
    }
}
