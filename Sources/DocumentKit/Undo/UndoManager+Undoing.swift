extension UndoManager {
    /// Undoes the last step: closes the open top-level group if there is one (as ``endUndoGrouping()`` does,
    /// notifications included), then calls ``undoNestedGroup()``.
    ///
    /// The operations registered while undoing form the redo step, named like the undone step.
    ///
    /// - Precondition: at most one group is open, and the manager is not undoing or redoing.
    public func undo() {
        precondition(!isUndoing && !isRedoing, "undo() called while undoing or redoing")
        precondition(groupingLevel <= 1, "undo() called with a nested undo group open")
        if groupingLevel == 1 {
            endUndoGrouping()
        }
        undoNestedGroup()
    }

    /// Undoes the last group, top-level or nested, and records what it registers as one redo step.
    ///
    /// With no group open, that is the last step of the undo stack. Inside an open group, it is the nested group
    /// closed last in the innermost non-empty open group. Posts ``checkpointNotification``, then, if there is
    /// something to undo, ``willUndoChangeNotification`` before running the operations and
    /// ``didUndoChangeNotification`` after.
    ///
    /// - Precondition: the manager is not undoing or redoing, and no operation was registered directly in the
    ///   open group since its last nested group closed.
    public func undoNestedGroup() {
        precondition(!isUndoing && !isRedoing, "undoNestedGroup() called while undoing or redoing")
        postCheckpoint()
        guard let group = takeGroupToUndo() else { return }
        postGroupNotification(Self.willUndoChangeNotification)
        isUndoing = true
        replay(group)
        isUndoing = false
        postGroupNotification(Self.didUndoChangeNotification)
    }

    /// Redoes the last undone step, recording what it registers as one undo step named like it.
    ///
    /// Posts ``checkpointNotification``, then, if there is something to redo, ``willRedoChangeNotification``
    /// before running the operations and ``didRedoChangeNotification`` after.
    ///
    /// - Precondition: the manager is not undoing or redoing.
    public func redo() {
        precondition(!isUndoing && !isRedoing, "redo() called while undoing or redoing")
        postCheckpoint()
        guard let group = redoStack.popLast() else { return }
        postGroupNotification(Self.willRedoChangeNotification)
        isRedoing = true
        replay(group)
        isRedoing = false
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
