extension UndoManager {
    /// The implementation of ``undo()``.
    func performUndo() {
        precondition(!undoInProgress && !redoInProgress, "undo() called while undoing or redoing")
        precondition(openGroups.count <= 1, "undo() called with a nested undo group open")
        if openGroups.count == 1 {
            endUndoGrouping()
        }
        undoNestedGroup()
    }

    /// The implementation of ``undoNestedGroup()``.
    func performUndoNestedGroup() {
        precondition(!undoInProgress && !redoInProgress, "undoNestedGroup() called while undoing or redoing")
        postCheckpoint()
        guard let group = takeGroupToUndo() else { return }
        postGroupNotification(Self.willUndoChangeNotification)
        undoInProgress = true
        replay(group)
        undoInProgress = false
        postGroupNotification(Self.didUndoChangeNotification)
    }

    /// The implementation of ``redo()``.
    func performRedo() {
        precondition(!undoInProgress && !redoInProgress, "redo() called while undoing or redoing")
        postCheckpoint()
        guard let group = redoStack.popLast() else { return }
        postGroupNotification(Self.willRedoChangeNotification)
        redoInProgress = true
        replay(group)
        redoInProgress = false
        postGroupNotification(Self.didRedoChangeNotification)
    }

    /// Removes and returns the group `undoNestedGroup()` undoes, or nil when there is none.
    private func takeGroupToUndo() -> UndoGroup? {
        guard let level = openGroups.lastIndex(where: { !$0.isEmpty }) else {
            return undoStack.popLast()
        }
        guard case .group(let nested) = openGroups[level].entries.last else {
            preconditionFailure("undoNestedGroup() called after registering in an open group")
        }
        openGroups[level].entries.removeLast()
        return nested
    }

    /// Runs `group`'s operations in a fresh top-level group that lands on the redo stack (undoing) or the undo
    /// stack (redoing); open groups are set aside meanwhile. Posts nothing.
    private func replay(_ group: UndoGroup) {
        let setAside = openGroups
        let setAsideIsAutomatic = automaticGroupIsOpen
        openGroups = [UndoGroup()]
        automaticGroupIsOpen = false
        group.performInReverse()
        if !openGroups.isEmpty {
            while openGroups.count > 1 { closeInnermostGroup() }
            if !group.actionName.isEmpty { openGroups[0].actionName = group.actionName }
            openGroups[0].isMarkedDiscardable = openGroups[0].isMarkedDiscardable || group.isDiscardable
            closeInnermostGroup()
        }
        openGroups = setAside
        automaticGroupIsOpen = setAsideIsAutomatic
    }
}
