extension UndoManager {
    /// The implementation of ``undoActionName``.
    var nameOfStepToUndo: String {
        if let open = openGroups.first, !open.isEmpty { return open.actionName }
        return undoStack.last?.actionName ?? ""
    }

    /// The implementation of ``redoActionName``.
    var nameOfStepToRedo: String {
        redoStack.last?.actionName ?? ""
    }

    /// The implementation of ``setActionName(_:)``.
    func recordActionName(_ actionName: String) {
        if openGroups.isEmpty {
            if !undoStack.isEmpty { undoStack[undoStack.count - 1].actionName = actionName }
        } else {
            for index in openGroups.indices { openGroups[index].actionName = actionName }
        }
    }

    /// The implementation of ``setActionIsDiscardable(_:)``.
    func recordActionIsDiscardable(_ discardable: Bool) {
        if openGroups.isEmpty {
            if !undoStack.isEmpty { undoStack[undoStack.count - 1].isMarkedDiscardable = discardable }
        } else {
            openGroups[openGroups.count - 1].isMarkedDiscardable = discardable
        }
    }

    /// The implementation of ``undoActionIsDiscardable``.
    var stepToUndoIsDiscardable: Bool {
        if let open = openGroups.first, !open.isEmpty { return open.isDiscardable }
        return undoStack.last?.isDiscardable ?? false
    }

    /// The implementation of ``redoActionIsDiscardable``.
    var stepToRedoIsDiscardable: Bool {
        redoStack.last?.isDiscardable ?? false
    }
}
