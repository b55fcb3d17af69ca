import DocumentKit
import Testing

@Suite("UndoManager: undo, redo and the stacks")
@MainActor
struct UndoManagerTests {
    @Test func undoRegistersRedoAndRedoRegistersUndo() {
        let manager = UndoManager()
        let model = UndoTestText(undoManager: manager)
        manager.group { model.setText("a") }
        manager.group { model.setText("ab") }
        #expect(manager.canUndo)
        #expect(!manager.canRedo)

        manager.undo()
        #expect(model.text == "a")
        #expect(manager.canRedo)
        manager.undo()
        #expect(model.text == "")
        #expect(!manager.canUndo)

        manager.redo()
        #expect(model.text == "a")
        manager.redo()
        #expect(model.text == "ab")
        #expect(!manager.canRedo)

        // The redone steps can be undone again, and redone again: the inverse is re-registered every time.
        manager.undo()
        manager.undo()
        #expect(model.text == "")
        manager.redo()
        manager.redo()
        #expect(model.text == "ab")
    }

    @Test func isUndoingAndIsRedoingAreTrueOnlyWhileTheOperationsRun() {
        let manager = UndoManager()
        let model = UndoTestText(undoManager: manager)
        var seen: [(undoing: Bool, redoing: Bool)] = []
        manager.group {
            manager.registerUndo(withTarget: model) { model in
                seen.append((model.undoManager.isUndoing, model.undoManager.isRedoing))
                model.undoManager.registerUndo(withTarget: model) { model in
                    seen.append((model.undoManager.isUndoing, model.undoManager.isRedoing))
                }
            }
        }
        manager.undo()
        manager.redo()
        #expect(seen.map(\.undoing) == [true, false])
        #expect(seen.map(\.redoing) == [false, true])
        #expect(!manager.isUndoing && !manager.isRedoing)
    }

    @Test func severalRegistrationsInOneGroupAreUndoneTogetherInReverseOrder() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.group {
            counter.add(1)
            counter.add(2)
            counter.add(3)
        }
        manager.group { counter.add(100) }

        manager.undo()
        #expect(counter.value == 6)
        manager.undo()
        #expect(counter.value == 0)
        #expect(counter.log == [1, 2, 3, 100, -100, -3, -2, -1])
        #expect(!manager.canUndo)

        manager.redo()
        #expect(counter.value == 6)
        #expect(counter.log.suffix(3) == [1, 2, 3])
    }

    @Test func newRegistrationClearsTheRedoStack() {
        let manager = UndoManager()
        let model = UndoTestText(undoManager: manager)
        manager.group { model.setText("a") }
        manager.group { model.setText("b") }
        manager.undo()
        #expect(manager.canRedo)

        manager.group { model.setText("c") }
        #expect(!manager.canRedo)
        manager.redo()
        #expect(model.text == "c")
        manager.undo()
        #expect(model.text == "a")
    }

    @Test func undoAndRedoWithEmptyStacksDoNothing() {
        let manager = UndoManager()
        manager.undo()
        manager.redo()
        #expect(!manager.canUndo && !manager.canRedo)
        #expect(manager.groupingLevel == 0)
    }

    @Test func levelsOfUndoDropsTheOldestSteps() {
        let manager = UndoManager()
        manager.levelsOfUndo = 2
        let counter = UndoTestCounter(undoManager: manager)
        for amount in [1, 10, 100] { manager.group { counter.add(amount) } }

        manager.undo()
        manager.undo()
        #expect(counter.value == 1)
        #expect(!manager.canUndo)
        manager.undo()
        #expect(counter.value == 1)
    }

    @Test func loweringLevelsOfUndoDropsStepsAtOnce() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        for amount in [1, 10, 100, 1000] { manager.group { counter.add(amount) } }
        manager.undo()
        manager.undo()
        #expect(counter.value == 11)

        manager.levelsOfUndo = 1
        #expect(manager.levelsOfUndo == 1)
        manager.undo()
        #expect(counter.value == 1)
        #expect(!manager.canUndo)
        manager.redo()
        #expect(counter.value == 11)
        #expect(!manager.canRedo, "the redo stack is limited too")
    }

    @Test func disablingRegistrationIsCounted() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.disableUndoRegistration()
        manager.disableUndoRegistration()
        manager.group { counter.add(1) }
        manager.enableUndoRegistration()
        #expect(!manager.isUndoRegistrationEnabled)
        manager.group { counter.add(2) }
        #expect(!manager.canUndo)

        manager.enableUndoRegistration()
        #expect(manager.isUndoRegistrationEnabled)
        manager.group { counter.add(4) }
        manager.undo()
        #expect(counter.value == 3)
        #expect(!manager.canUndo)
    }

    @Test func registrationWhileDisabledDoesNotClearTheRedoStack() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.group { counter.add(1) }
        manager.undo()
        manager.disableUndoRegistration()
        manager.group { counter.add(5) }
        manager.enableUndoRegistration()
        #expect(manager.canRedo)
        manager.redo()
        #expect(counter.value == 6)
    }

    @Test func undoWithRegistrationDisabledRecordsNoRedo() {
        let manager = UndoManager()
        let model = UndoTestText(undoManager: manager)
        manager.group { model.setText("a") }
        manager.disableUndoRegistration()
        manager.undo()
        manager.enableUndoRegistration()
        #expect(model.text == "")
        #expect(!manager.canRedo)
    }

    @Test func removeAllActionsWithTargetForgetsOnlyThatTarget() {
        let manager = UndoManager()
        let kept = UndoTestCounter(undoManager: manager)
        let removed = UndoTestCounter(undoManager: manager)
        manager.group { kept.add(1) }
        manager.group {
            kept.add(10)
            removed.add(10)
        }
        manager.group { removed.add(100) }
        manager.group { kept.add(1000) }
        manager.undo()
        #expect(manager.canRedo)

        manager.removeAllActions(withTarget: removed)
        manager.undo()
        #expect(kept.value == 1)
        #expect(removed.value == 110, "nothing registered for the removed target runs")
        manager.undo()
        #expect(kept.value == 0)
        #expect(!manager.canUndo, "the step holding only the removed target's action is gone")
        manager.redo()
        manager.redo()
        manager.redo()
        #expect(kept.value == 1011)
        #expect(removed.value == 110)
    }

    @Test func removeAllActionsEmptiesEverythingAndReenablesRegistration() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.group { counter.add(1) }
        manager.group { counter.add(2) }
        manager.undo()
        manager.beginUndoGrouping()
        counter.add(3)
        manager.disableUndoRegistration()

        manager.removeAllActions()
        #expect(!manager.canUndo && !manager.canRedo)
        #expect(manager.groupingLevel == 0)
        #expect(manager.isUndoRegistrationEnabled)
        manager.group { counter.add(4) }
        manager.undo()
        #expect(counter.value == 4)
    }

    @Test func anOperationWhoseTargetIsGoneIsSkipped() {
        let manager = UndoManager()
        let survivor = UndoTestCounter(undoManager: manager)
        manager.group {
            survivor.add(1)
            let shortLived = UndoTestCounter(undoManager: manager)
            shortLived.add(1)
        }
        manager.undo()
        #expect(survivor.value == 0)
        #expect(!manager.canUndo)
    }

    @Test func precondition_endUndoGroupingWithoutOpenGroupStops() async {
        await #expect(processExitsWith: .failure) {
            await MainActor.run { UndoManager().endUndoGrouping() }
        }
    }

    @Test func precondition_undoWithANestedGroupOpenStops() async {
        await #expect(processExitsWith: .failure) {
            await MainActor.run {
                let manager = UndoManager()
                manager.beginUndoGrouping()
                manager.beginUndoGrouping()
                manager.undo()
            }
        }
    }
}
