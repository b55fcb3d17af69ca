import Dispatch
import Foundation

extension UndoManager {
    /// The implementation of ``beginUndoGrouping()``.
    func performBeginUndoGrouping() {
        postCheckpoint()
        openGroups.append(UndoGroup())
        postGroupNotification(Self.didOpenUndoGroupNotification)
    }

    /// The implementation of ``endUndoGrouping()``.
    func performEndUndoGrouping() {
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
                if undoInProgress {
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

    /// Closes the automatic group now if it is open with nothing nested in it, instead of at the end of this turn of
    /// the main actor — what a document does before it decides whether it has unsaved changes (to save or close).
    package func closeAutomaticGroupNow() {
        if automaticGroupIsOpen && openGroups.count == 1 && !undoInProgress && !redoInProgress {
            endUndoGrouping()
        }
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
            if self.automaticGroupIsOpen && self.openGroups.count == 1 && !self.undoInProgress
                && !self.redoInProgress
            {
                self.endUndoGrouping()
            }
        }
    }
}
