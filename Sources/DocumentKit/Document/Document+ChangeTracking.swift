import Foundation

extension Document {

    func scheduleAutosaveIfNeeded() {
        guard hasUnsavedChanges else { return cancelAutosave() }
        guard autosaveTask == nil, !documentState.contains(.closed) else { return }
        // After failed autosaves, wait longer each time (up to a minute) but keep trying: unsaved work must reach
        // the disk without waiting for another edit.
        let backoff = min(1 << min(autosaveFailures, 16), 60)
        let delay = autosaveFailures == 0 ? autosaveDelay : max(autosaveDelay, .seconds(backoff))
        // The autosave timer: one pending at a time, cancelled on close; it must outlive the edit that started it.
        let clock = clock
        autosaveTask = Task { [weak self] in
            try? await clock.sleep(for: delay)
            guard !Task.isCancelled, let self else { return }
            self.autosaveTask = nil
            guard self.hasUnsavedChanges, !self.documentState.contains(.closed) else { return }
            self.autosave { saved in
                self.autosaveFailures = saved ? 0 : self.autosaveFailures + 1
                self.scheduleAutosaveIfNeeded()
            }
        }
    }

    func cancelAutosave() {
        autosaveTask?.cancel()
        autosaveTask = nil
    }

    /// Observes `manager` so that closing an outermost undo group counts as `.done`, an undo as `.undone` and a
    /// redo as `.redone`. UndoManager posts none of these for the groups it forms while undoing or redoing.
    func observeChanges(of manager: UndoManager) -> [any NSObjectProtocol] {
        let center = NotificationCenter.default
        let mapping: [(Notification.Name, ChangeKind)] = [
            (UndoManager.didCloseUndoGroupNotification, .done),
            (UndoManager.didUndoChangeNotification, .undone),
            (UndoManager.didRedoChangeNotification, .redone),
        ]
        return mapping.map { name, kind in
            center.addObserver(forName: name, object: manager, queue: nil) { [weak self] _ in
                // UndoManager is main-actor isolated and posts synchronously from its methods.
                MainActor.assumeIsolated { () -> Void in
                    // Only the close of an outermost group is a user-visible step; nested groups close inside it.
                    if kind == .done && manager.groupingLevel != 0 { return }
                    self?.updateChangeCount(kind)
                }
            }
        }
    }
}
