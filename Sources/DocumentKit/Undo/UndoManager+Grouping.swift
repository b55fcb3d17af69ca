import Dispatch
import Foundation

extension UndoManager {
    /// The number of open groups: 0 when none is open, 2 inside a group nested in another.
    public var groupingLevel: Int { openGroups.count }

    /// Opens a group: operations registered until the matching ``endUndoGrouping()`` are undone as one step.
    ///
    /// Groups nest; a nested group is undone with its parent, or alone with ``undoNestedGroup()``. Posts
    /// ``checkpointNotification``, opens the group, then posts ``didOpenUndoGroupNotification`` (nothing while
    /// undoing or redoing).
    public func beginUndoGrouping() {
        postCheckpoint()
        openGroups.append(UndoGroup())
        postGroupNotification(Self.didOpenUndoGroupNotification)
    }

    /// Closes the innermost open group.
    ///
    /// A nested group becomes one entry of its parent; a top-level group is pushed on the undo stack (the redo
    /// stack while undoing), the oldest group being dropped beyond ``levelsOfUndo``. A group that closes empty
    /// is discarded. Posts ``checkpointNotification`` and ``willCloseUndoGroupNotification`` before closing and
    /// ``didCloseUndoGroupNotification`` after (nothing while undoing or redoing).
    ///
    /// - Precondition: a group is open.
    public func endUndoGrouping() {
        precondition(!openGroups.isEmpty, "endUndoGrouping() without a matching beginUndoGrouping()")
        postCheckpoint()
        postGroupNotification(Self.willCloseUndoGroupNotification)
        let closed = closeInnermostGroup()
        postGroupNotification(
            Self.didCloseUndoGroupNotification,
            userInfo: [Self.groupIsDiscardableKey: closed.isDiscardable]
        )
    }

    /// Pops the innermost open group and files it; returns it. Posts nothing.
    @discardableResult
    func closeInnermostGroup() -> UndoGroup {
        let closed = openGroups.removeLast()
        if openGroups.isEmpty {
            automaticGroupIsOpen = false
            if !closed.isEmpty {
                if isUndoing {
                    redoStack.append(closed)
                    trim(&redoStack)
                } else {
                    undoStack.append(closed)
                    trim(&undoStack)
                }
            }
        } else {
            if !closed.isEmpty {
                openGroups[openGroups.count - 1].entries.append(.group(closed))
            }
            if openGroups.count == 1 && automaticGroupIsOpen {
                scheduleAutomaticClose()
            }
        }
        return closed
    }

    /// Schedules the close of the automatic group on the main queue, after the code now running on the main actor.
    ///
    /// The job closes the group only if it is still open and nothing is nested in it; if a nested group is still
    /// open then, the job is scheduled again when that group closes.
    func scheduleAutomaticClose() {
        guard !automaticCloseIsScheduled else { return }
        automaticCloseIsScheduled = true
        DispatchQueue.main.async { [weak self] in
            guard let self else { return }
            self.automaticCloseIsScheduled = false
            if self.automaticGroupIsOpen && self.openGroups.count == 1 && !self.isUndoing && !self.isRedoing {
                self.endUndoGrouping()
            }
        }
    }
}
