import Foundation

/// Placeholder: records undo operations — the equivalent of Foundation's `UndoManager`.
@MainActor
open class UndoManager {
    /// Posted after a group is closed.
    public static let didCloseUndoGroupNotification = Notification.Name("NSUndoManagerDidCloseUndoGroupNotification")
    /// Posted after an undo.
    public static let didUndoChangeNotification = Notification.Name("NSUndoManagerDidUndoChangeNotification")
    /// Posted after a redo.
    public static let didRedoChangeNotification = Notification.Name("NSUndoManagerDidRedoChangeNotification")

    /// Creates an empty undo manager.
    public init() {}
}
