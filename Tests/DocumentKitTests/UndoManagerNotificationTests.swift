import DocumentKit
import Foundation
import Testing

@Suite("UndoManager: notifications")
@MainActor
struct UndoManagerNotificationTests {
    @Test func namesAreApples() {
        #expect(UndoManager.checkpointNotification.rawValue == "NSUndoManagerCheckpointNotification")
        #expect(Notification.Name.NSUndoManagerCheckpoint == UndoManager.checkpointNotification)
        #expect(UndoManager.didOpenUndoGroupNotification.rawValue == "NSUndoManagerDidOpenUndoGroupNotification")
        #expect(UndoManager.willCloseUndoGroupNotification.rawValue == "NSUndoManagerWillCloseUndoGroupNotification")
        #expect(UndoManager.didCloseUndoGroupNotification.rawValue == "NSUndoManagerDidCloseUndoGroupNotification")
        #expect(UndoManager.willUndoChangeNotification.rawValue == "NSUndoManagerWillUndoChangeNotification")
        #expect(UndoManager.didUndoChangeNotification.rawValue == "NSUndoManagerDidUndoChangeNotification")
        #expect(UndoManager.willRedoChangeNotification.rawValue == "NSUndoManagerWillRedoChangeNotification")
        #expect(UndoManager.didRedoChangeNotification.rawValue == "NSUndoManagerDidRedoChangeNotification")
        #expect(UndoManager.groupIsDiscardableKey == "NSUndoManagerGroupIsDiscardableKey")
        #expect(NSUndoManagerGroupIsDiscardableKey == UndoManager.groupIsDiscardableKey)
    }

    @Test func explicitGroupsPostCheckpointOpenAndCloseInOrder() {
        let manager = UndoManager()
        let recorder = UndoNotificationRecorder(manager)
        defer { recorder.stop() }
        let counter = UndoTestCounter(undoManager: manager)
        manager.beginUndoGrouping()
        #expect(recorder.names == ["Checkpoint", "DidOpenUndoGroup"])
        counter.add(1)
        manager.group { counter.add(2) }
        manager.endUndoGrouping()
        #expect(
            recorder.names == [
                "Checkpoint", "DidOpenUndoGroup",
                "Checkpoint", "DidOpenUndoGroup",
                "Checkpoint", "WillCloseUndoGroup", "DidCloseUndoGroup",
                "Checkpoint", "WillCloseUndoGroup", "DidCloseUndoGroup",
            ]
        )
    }

    @Test func undoAndRedoPostTheirNotificationsAndNothingForTheGroupsTheyForm() {
        let manager = UndoManager()
        let recorder = UndoNotificationRecorder(manager)
        defer { recorder.stop() }
        let model = UndoTestText(undoManager: manager)

        model.setText("a")
        #expect(recorder.names == ["Checkpoint", "DidOpenUndoGroup"], "the automatic group opens like any other")
        recorder.reset()

        manager.undo()
        #expect(
            recorder.names == [
                "Checkpoint", "WillCloseUndoGroup", "DidCloseUndoGroup",
                "Checkpoint", "WillUndoChange", "DidUndoChange",
            ]
        )
        recorder.reset()

        manager.redo()
        #expect(recorder.names == ["Checkpoint", "WillRedoChange", "DidRedoChange"])
        recorder.reset()

        manager.undo()
        #expect(recorder.names == ["Checkpoint", "WillUndoChange", "DidUndoChange"])
        #expect(!recorder.postedWhileUndoingOrRedoing.contains(true))
    }

    @Test func groupsOpenedByHandlersWhileUndoingAreSilent() {
        let manager = UndoManager()
        let counter = UndoTestCounter(undoManager: manager)
        manager.group {
            manager.registerUndo(withTarget: counter) { counter in
                counter.undoManager.group { counter.add(5) }
            }
        }
        let recorder = UndoNotificationRecorder(manager)
        defer { recorder.stop() }
        manager.undo()
        #expect(recorder.names == ["Checkpoint", "WillUndoChange", "DidUndoChange"])
        manager.redo()
        #expect(counter.value == 0)
    }

    @Test func undoWithNothingToUndoPostsOnlyACheckpoint() {
        let manager = UndoManager()
        let recorder = UndoNotificationRecorder(manager)
        defer { recorder.stop() }
        manager.undo()
        manager.redo()
        #expect(recorder.names == ["Checkpoint", "Checkpoint"])
    }

    @Test func canRedoPostsACheckpointWithoutRecursing() {
        let manager = UndoManager()
        var answers: [Bool] = []
        let observer = NotificationCenter.default.addObserver(
            forName: UndoManager.checkpointNotification,
            object: manager,
            queue: nil
        ) { _ in
            MainActor.assumeIsolated { answers.append(manager.canRedo) }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        _ = manager.canRedo
        #expect(answers == [false])
    }

    @Test func didCloseTellsWhetherTheGroupIsDiscardable() {
        let manager = UndoManager()
        let recorder = UndoNotificationRecorder(manager, names: [UndoManager.didCloseUndoGroupNotification])
        defer { recorder.stop() }
        let counter = UndoTestCounter(undoManager: manager)
        manager.group { counter.add(1) }
        manager.group {
            counter.add(1)
            manager.setActionIsDiscardable(true)
        }
        #expect(recorder.closedGroupsDiscardable == [false, true])
    }

    @Test func aDocumentMapsNotificationsToExactlyOneChangePerStep() async {
        let manager = UndoManager()
        let tracker = UndoChangeTracker(manager)
        defer { tracker.stop() }
        let model = UndoTestText(undoManager: manager)

        model.setText("a")
        await nextMainTurn()
        model.setText("ab")
        await nextMainTurn()
        manager.undo()
        manager.redo()
        manager.undo()
        model.setText("ac")
        await nextMainTurn()

        #expect(tracker.changes == [.done, .done, .undone, .redone, .undone, .done])
        #expect(model.text == "ac")
    }

    @Test func aDocumentCountsANestedEditOnceAndAnUndoInTheSameTurnCorrectly() async {
        let manager = UndoManager()
        let tracker = UndoChangeTracker(manager)
        defer { tracker.stop() }
        let counter = UndoTestCounter(undoManager: manager)

        manager.group {
            counter.add(1)
            manager.group { counter.add(2) }
        }
        counter.add(3)
        manager.undo()
        manager.undo()
        manager.redo()
        await nextMainTurn()

        #expect(tracker.changes == [.done, .done, .undone, .undone, .redone])
        #expect(counter.value == 3)
    }
}
