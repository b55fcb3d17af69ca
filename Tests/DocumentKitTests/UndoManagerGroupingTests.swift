import DocumentKit
import Testing

@Suite("UndoManager: groups")
@MainActor
struct UndoManagerGroupingTests {
    @Test func groupingLevelFollowsBeginAndEnd() {
        let manager = UndoManager()
        #expect(manager.groupingLevel == 0)
        manager.beginUndoGrouping()
        manager.beginUndoGrouping()
        #expect(manager.groupingLevel == 2)
        manager.endUndoGrouping()
        #expect(manager.groupingLevel == 1)
        manager.endUndoGrouping()
        #expect(manager.groupingLevel == 0)
    }

    @Test func aNestedGroupIsUndoneWithItsParent() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.group {
            counter.add(1)
            manager.group { counter.add(10) }
            counter.add(100)
        }
        manager.undo()
        #expect(counter.value == 0)
        #expect(counter.log == [1, 10, 100, -100, -10, -1])
        manager.redo()
        #expect(counter.value == 111)
        #expect(!manager.canRedo)
    }

    @Test func undoNestedGroupUndoesOnlyTheLastNestedGroup() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.beginUndoGrouping()
        counter.add(1)
        manager.group { counter.add(10) }

        manager.undoNestedGroup()
        #expect(counter.value == 1)
        #expect(manager.groupingLevel == 1, "the enclosing group stays open")
        #expect(manager.canRedo)

        manager.endUndoGrouping()
        manager.undo()
        #expect(counter.value == 0)
        manager.redo()
        #expect(counter.value == 1)
        manager.redo()
        #expect(counter.value == 11)
    }

    @Test func undoNestedGroupWithNoGroupOpenUndoesTheLastStep() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.group { counter.add(1) }
        manager.group { counter.add(2) }
        manager.undoNestedGroup()
        #expect(counter.value == 1)
        manager.redo()
        #expect(counter.value == 3)
    }

    @Test func anEmptyGroupLeavesNoStep() {
        let manager = UndoManager()
        manager.group {}
        manager.group { manager.group {} }
        #expect(!manager.canUndo)
    }

    @Test func canUndoCountsTheOpenGroup() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.beginUndoGrouping()
        #expect(!manager.canUndo)
        counter.add(1)
        #expect(manager.canUndo)
        manager.undo()
        #expect(counter.value == 0)
        #expect(manager.groupingLevel == 0, "undo() closes the open top-level group first")
    }

    @Test func registrationsInOneTurnOfTheMainActorFormOneStep() async {
        let manager = UndoManager()
        #expect(manager.groupsByEvent)
        let model = UndoTestText(undoManager: manager)
        model.setText("a")
        #expect(manager.groupingLevel == 1, "the first registration opens a group")
        model.setText("ab")
        #expect(manager.groupingLevel == 1)

        await nextMainTurn()
        #expect(manager.groupingLevel == 0, "the group closes when the turn ends")
        model.setText("abc")
        await nextMainTurn()

        manager.undo()
        #expect(model.text == "ab")
        manager.undo()
        #expect(model.text == "")
        #expect(!manager.canUndo)
    }

    @Test func undoInTheSameTurnClosesTheAutomaticGroup() async {
        let manager = UndoManager()
        let recorder = UndoNotificationRecorder(manager, names: [UndoManager.didCloseUndoGroupNotification])
        defer { recorder.stop() }
        let model = UndoTestText(undoManager: manager)
        model.setText("a")
        manager.undo()
        #expect(model.text == "")
        model.setText("b")
        #expect(manager.groupingLevel == 1)

        await nextMainTurn()
        #expect(manager.groupingLevel == 0)
        #expect(recorder.names.count == 2, "each automatic group closes exactly once")
        manager.undo()
        #expect(model.text == "")
        #expect(!manager.canUndo)
    }

    @Test func theAutomaticGroupWaitsForANestedGroupToClose() async {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        counter.add(1)
        manager.beginUndoGrouping()
        counter.add(10)
        await nextMainTurn()
        #expect(manager.groupingLevel == 2)

        manager.endUndoGrouping()
        #expect(manager.groupingLevel == 1)
        await nextMainTurn()
        #expect(manager.groupingLevel == 0)
        manager.undo()
        #expect(counter.value == 0)
    }

    @Test func anExplicitGroupIsNotClosedAtTheEndOfTheTurn() async {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.beginUndoGrouping()
        counter.add(1)
        await nextMainTurn()
        #expect(manager.groupingLevel == 1)
        counter.add(2)
        manager.endUndoGrouping()
        manager.undo()
        #expect(counter.value == 0)
    }

    @Test func withoutGroupsByEventEachExplicitGroupIsAStep() async {
        let manager = UndoManager()
        manager.groupsByEvent = false
        let counter = UndoTestCounter(undoManager: manager)
        manager.group { counter.add(1) }
        manager.group { counter.add(2) }
        manager.undo()
        #expect(counter.value == 1)
    }

    @Test func precondition_registeringOutsideAGroupWithoutGroupsByEventStops() async {
        await #expect(processExitsWith: .failure) {
            await MainActor.run {
                let manager = UndoManager()
                manager.groupsByEvent = false
                UndoTestCounter(undoManager: manager).add(1)
            }
        }
    }
}
