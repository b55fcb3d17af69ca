import Foundation

extension UndoManager {
    /// Posted when a group opens or closes and before undo or redo, so that observers can register pending
    /// operations (such as coalesced typing) first. Also ``NSNotification/Name/NSUndoManagerCheckpoint``.
    nonisolated public static let checkpointNotification = Notification.Name("NSUndoManagerCheckpointNotification")
    /// Posted after a group is opened (not while undoing or redoing).
    nonisolated public static let didOpenUndoGroupNotification = Notification.Name(
        "NSUndoManagerDidOpenUndoGroupNotification"
    )
    /// Posted before a group is closed (not while undoing or redoing).
    nonisolated public static let willCloseUndoGroupNotification = Notification.Name(
        "NSUndoManagerWillCloseUndoGroupNotification"
    )
    /// Posted after a group is closed (not while undoing or redoing); `userInfo` holds ``groupIsDiscardableKey``.
    ///
    /// With ``groupingLevel`` 0 it means a new step was recorded: a document counts it as a change done.
    nonisolated public static let didCloseUndoGroupNotification = Notification.Name(
        "NSUndoManagerDidCloseUndoGroupNotification"
    )
    /// Posted before the operations of an undo run.
    nonisolated public static let willUndoChangeNotification = Notification.Name(
        "NSUndoManagerWillUndoChangeNotification"
    )
    /// Posted after the operations of an undo ran: a document counts it as a change undone.
    nonisolated public static let didUndoChangeNotification = Notification.Name(
        "NSUndoManagerDidUndoChangeNotification"
    )
    /// Posted before the operations of a redo run.
    nonisolated public static let willRedoChangeNotification = Notification.Name(
        "NSUndoManagerWillRedoChangeNotification"
    )
    /// Posted after the operations of a redo ran: a document counts it as a change redone.
    nonisolated public static let didRedoChangeNotification = Notification.Name(
        "NSUndoManagerDidRedoChangeNotification"
    )
    /// The `userInfo` key of ``didCloseUndoGroupNotification`` whose `Bool` value tells whether the closed group is
    /// discardable (see ``setActionIsDiscardable(_:)``).
    nonisolated public static let groupIsDiscardableKey = "NSUndoManagerGroupIsDiscardableKey"

    /// Posts `name` with this manager as object, unless undoing or redoing.
    func postGroupNotification(_ name: Notification.Name, userInfo: [AnyHashable: Any]? = nil) {
        guard !undoInProgress && !redoInProgress else { return }
        NotificationCenter.default.post(name: name, object: self, userInfo: userInfo)
    }

    /// Posts ``checkpointNotification`` unless undoing, redoing or already posting one.
    func postCheckpoint() {
        guard !isPostingCheckpoint else { return }
        isPostingCheckpoint = true
        defer { isPostingCheckpoint = false }
        postGroupNotification(Self.checkpointNotification)
    }
}

extension Notification.Name {
    /// Apple's name for ``UndoManager/checkpointNotification``.
    public static let NSUndoManagerCheckpoint = UndoManager.checkpointNotification
}

/// Apple's name for ``UndoManager/groupIsDiscardableKey``.
public let NSUndoManagerGroupIsDiscardableKey = UndoManager.groupIsDiscardableKey
