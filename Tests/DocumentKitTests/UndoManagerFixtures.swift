import Dispatch
import DocumentKit
import Foundation

/// A text model whose setter registers its own inverse: undoing registers the redo and redoing the undo.
@MainActor
final class UndoTestText {
    let undoManager: UndoManager
    private(set) var text: String

    init(_ text: String = "", undoManager: UndoManager) {
        self.text = text
        self.undoManager = undoManager
    }

    func setText(_ newText: String, actionName: String = "Typing") {
        let oldText = text
        undoManager.registerUndo(withTarget: self) { $0.setText(oldText, actionName: actionName) }
        undoManager.setActionName(actionName)
        text = newText
    }
}

/// A counter that logs every change it undergoes, to check the order undo operations run in.
@MainActor
final class UndoTestCounter {
    let undoManager: UndoManager
    private(set) var value = 0
    private(set) var log: [Int] = []

    init(undoManager: UndoManager) {
        self.undoManager = undoManager
    }

    func add(_ amount: Int) {
        undoManager.registerUndo(withTarget: self) { $0.add(-amount) }
        value += amount
        log.append(amount)
    }
}

/// Records the undo manager's notifications, short-named ("Checkpoint", "DidCloseUndoGroup"...), as they are posted.
@MainActor
final class UndoNotificationRecorder {
    static let allNames: [Notification.Name] = [
        UndoManager.checkpointNotification,
        UndoManager.didOpenUndoGroupNotification,
        UndoManager.willCloseUndoGroupNotification,
        UndoManager.didCloseUndoGroupNotification,
        UndoManager.willUndoChangeNotification,
        UndoManager.didUndoChangeNotification,
        UndoManager.willRedoChangeNotification,
        UndoManager.didRedoChangeNotification,
    ]

    /// Short notification names in posting order.
    private(set) var names: [String] = []
    /// For each notification, whether the manager said it was undoing or redoing when it was posted.
    private(set) var postedWhileUndoingOrRedoing: [Bool] = []
    /// The `groupIsDiscardableKey` value of each didCloseUndoGroup notification.
    private(set) var closedGroupsDiscardable: [Bool?] = []
    private var observers: [any NSObjectProtocol] = []

    init(_ manager: UndoManager, names: [Notification.Name] = UndoNotificationRecorder.allNames) {
        for name in names {
            let observer = NotificationCenter.default.addObserver(forName: name, object: manager, queue: nil) {
                [weak self] note in
                let short = note.name.rawValue
                    .replacingOccurrences(of: "NSUndoManager", with: "")
                    .replacingOccurrences(of: "Notification", with: "")
                let discardable = note.userInfo?[UndoManager.groupIsDiscardableKey] as? Bool
                let isDidClose = note.name == UndoManager.didCloseUndoGroupNotification
                MainActor.assumeIsolated {
                    guard let self else { return }
                    self.names.append(short)
                    self.postedWhileUndoingOrRedoing.append(manager.isUndoing || manager.isRedoing)
                    if isDidClose { self.closedGroupsDiscardable.append(discardable) }
                }
            }
            observers.append(observer)
        }
    }

    /// Forgets what was recorded so far.
    func reset() {
        names = []
        postedWhileUndoingOrRedoing = []
        closedGroupsDiscardable = []
    }

    func stop() {
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
        observers = []
    }
}

/// Maps notifications to document changes the way `Document` does: a top-level group closed outside undo/redo
/// is a change done, an undo a change undone, a redo a change redone.
@MainActor
final class UndoChangeTracker {
    enum Change: Equatable {
        case done, undone, redone
    }

    private(set) var changes: [Change] = []
    private var observers: [any NSObjectProtocol] = []

    init(_ manager: UndoManager) {
        let center = NotificationCenter.default
        observers.append(
            center.addObserver(forName: UndoManager.didCloseUndoGroupNotification, object: manager, queue: nil) {
                [weak self] _ in
                MainActor.assumeIsolated {
                    if !manager.isUndoing && !manager.isRedoing && manager.groupingLevel == 0 {
                        self?.changes.append(.done)
                    }
                }
            }
        )
        observers.append(
            center.addObserver(forName: UndoManager.didUndoChangeNotification, object: manager, queue: nil) {
                [weak self] _ in
                MainActor.assumeIsolated { self?.changes.append(.undone) }
            }
        )
        observers.append(
            center.addObserver(forName: UndoManager.didRedoChangeNotification, object: manager, queue: nil) {
                [weak self] _ in
                MainActor.assumeIsolated { self?.changes.append(.redone) }
            }
        )
    }

    func stop() {
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
        observers = []
    }
}

/// Returns once every job already on the main queue has run — in particular a pending automatic group close.
@MainActor
func nextMainTurn() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.main.async { continuation.resume() }
    }
}

extension UndoManager {
    /// Runs `body` inside an explicit group.
    func group(_ body: () -> Void) {
        beginUndoGrouping()
        body()
        endUndoGrouping()
    }
}
