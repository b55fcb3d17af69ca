/// One registered undo operation: a weakly held target and the handler that undoes the change on it.
struct UndoAction {
    /// The object the handler is applied to; the undo manager does not keep it alive.
    weak var target: AnyObject?
    /// Applies the undo operation to `target`.
    let perform: @MainActor (AnyObject) -> Void
}

/// A group of undo operations undone or redone as one step; groups nest.
struct UndoGroup {
    /// One element of a group: a single operation, or a nested group that was closed inside it.
    indirect enum Entry {
        case action(UndoAction)
        case group(UndoGroup)
    }

    /// The entries in registration order.
    var entries: [Entry] = []
    /// The name shown in "Undo <name>"; empty when none was set.
    var actionName = ""
    /// Set by `setActionIsDiscardable(_:)` while this group was open.
    var isMarkedDiscardable = false

    /// Whether the group holds nothing to undo.
    var isEmpty: Bool { entries.isEmpty }

    /// A group is discardable when it was marked so, or when it is made only of discardable nested groups.
    var isDiscardable: Bool {
        if isMarkedDiscardable { return true }
        return !entries.isEmpty
            && entries.allSatisfy { entry in
                if case .group(let nested) = entry { return nested.isDiscardable }
                return false
            }
    }

    /// Performs every operation, the most recently registered first, nested groups recursively.
    /// Operations whose target no longer exists are skipped.
    @MainActor
    func performInReverse() {
        for entry in entries.reversed() {
            switch entry {
            case .action(let action):
                if let target = action.target { action.perform(target) }
            case .group(let nested):
                nested.performInReverse()
            }
        }
    }

    /// Removes every operation whose target is `target` (or whose target is gone), dropping nested groups that
    /// become empty.
    mutating func removeActions(withTarget target: AnyObject) {
        entries = entries.compactMap { entry in
            switch entry {
            case .action(let action):
                guard let actionTarget = action.target, actionTarget !== target else { return nil }
                return entry
            case .group(var nested):
                nested.removeActions(withTarget: target)
                return nested.isEmpty ? nil : .group(nested)
            }
        }
    }
}
