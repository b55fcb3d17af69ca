extension UndoManager {
    /// The name of the step ``undo()`` would undo, or "" when it has none.
    public var undoActionName: String {
        if let open = openGroups.first, !open.isEmpty { return open.actionName }
        return undoStack.last?.actionName ?? ""
    }

    /// The name of the step ``redo()`` would redo, or "" when it has none.
    public var redoActionName: String {
        redoStack.last?.actionName ?? ""
    }

    /// The title of the Undo menu item, such as "Undo Typing", or "Undo" when the step has no name.
    public var undoMenuItemTitle: String {
        undoMenuTitle(forUndoActionName: undoActionName)
    }

    /// The title of the Redo menu item, such as "Redo Typing", or "Redo" when the step has no name.
    public var redoMenuItemTitle: String {
        redoMenuTitle(forUndoActionName: redoActionName)
    }

    /// Names the step being recorded, as shown in "Undo <name>" and "Redo <name>"; "" removes the name.
    ///
    /// Names every open group (while undoing, the redo step being recorded — though an undone step passes its own
    /// name on to its redo step); with none open, the last step of the undo stack.
    ///
    /// - Parameter actionName: A short, capitalised verb phrase such as "Typing" or "Delete Item".
    public func setActionName(_ actionName: String) {
        if openGroups.isEmpty {
            if !undoStack.isEmpty { undoStack[undoStack.count - 1].actionName = actionName }
        } else {
            for index in openGroups.indices { openGroups[index].actionName = actionName }
        }
    }

    /// Marks the step being recorded as discardable (or not): a change that need not be saved, such as a selection.
    ///
    /// Applies to the innermost open group; with none open, to the last step of the undo stack. A group is
    /// discardable when it is marked so or made only of discardable nested groups; its redo step inherits it.
    ///
    /// - Parameter discardable: Whether the step is discardable.
    public func setActionIsDiscardable(_ discardable: Bool) {
        if openGroups.isEmpty {
            if !undoStack.isEmpty { undoStack[undoStack.count - 1].isMarkedDiscardable = discardable }
        } else {
            openGroups[openGroups.count - 1].isMarkedDiscardable = discardable
        }
    }

    /// Whether the step ``undo()`` would undo is discardable.
    public var undoActionIsDiscardable: Bool {
        if let open = openGroups.first, !open.isEmpty { return open.isDiscardable }
        return undoStack.last?.isDiscardable ?? false
    }

    /// Whether the step ``redo()`` would redo is discardable.
    public var redoActionIsDiscardable: Bool {
        redoStack.last?.isDiscardable ?? false
    }
}
