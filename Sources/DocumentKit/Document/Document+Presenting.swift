import Foundation

// The document as a file presenter. Coordinators call these on `presentedItemOperationQueue`; each hops to the main
// actor or into the document's file-access turn. The `Task`s below are how a presenter answers a coordinator
// asynchronously: the coordinator waits for the handler or reacquirer it was given, not for the method to return.
extension Document {
    func startPresenting() {
        guard !isPresenting else { return }
        isPresenting = true
        FileCoordinator.addFilePresenter(self)
    }

    func stopPresenting() {
        guard isPresenting else { return }
        isPresenting = false
        FileCoordinator.removeFilePresenter(self)
    }

    /// Lets a reader in once the document's pending file access is done, and holds further access until it is done.
    nonisolated func relinquishToReader(
        _ reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void
    ) {
        let serializer = serializer
        let ticket = serializer.reserve()
        Task.detached {
            await serializer.wait(for: ticket)
            reader { serializer.finish(ticket) }
        }
    }

    /// Lets a writer in once the document's pending file access is done; when it is done, reverts to what it wrote
    /// if the document has no unsaved changes.
    nonisolated func relinquishToWriter(
        _ writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void
    ) {
        let serializer = serializer
        let ticket = serializer.reserve()
        Task.detached { [weak self] in
            await serializer.wait(for: ticket)
            writer {
                serializer.finish(ticket)
                Task { @MainActor in await self?.revertIfChangedOnDisk() }
            }
        }
    }

    /// Saves unsaved changes so that a reader sees them. Whether there are any, and where the file is, are decided in
    /// the save's file-access turn: a move or deletion handled before it must not send the save to the old place.
    nonisolated func saveForReader(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        Task { @MainActor in
            do {
                try await self.inFileAccessTurn {
                    guard self.hasUnsavedChanges, !self.documentState.contains(.closed) else { return }
                    try await self.performSave(to: self.fileURL, for: .forOverwriting)
                }
                completionHandler(nil)
            } catch {
                completionHandler(error)
            }
        }
    }

    /// The file is being (or, when another process did it, has been) deleted: the document closes without saving,
    /// since there is nothing left to save to. Its unsaved changes are dropped and its autosave stopped as soon as the
    /// notice arrives, not only in its file-access turn, so that no save asked for in between recreates the file.
    nonisolated func closeForDeletion(
        completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        Task { @MainActor in
            self.wasDeleted = true
            if !self.documentState.contains(.closed) {
                self.cancelAutosave()
                self.changeTracking.apply(.cleared)
                self.documentState.insert(.editingDisabled)
            }
            await self.inFileAccessTurn {
                guard !self.documentState.contains(.closed) else { return }
                self.changeTracking.apply(.cleared)
                self.markClosed()
            }
            completionHandler(nil)
        }
    }

    /// The file moved: the document follows it.
    nonisolated func followMove(to newURL: URL) {
        let url = newURL.standardizedFileURL
        presentedURL.withLock { $0 = url }
        Task { @MainActor in
            // Only the latest move counts: after A → B → C, the task for B must not set B back.
            if self.presentedURL.withLock({ $0 }) == url { self.fileURL = url }
        }
    }

    /// Another writer changed the file: a document without unsaved changes reverts to it.
    ///
    /// The coordination layer sends this only for real changes by others (it compares the item's full identity, taken
    /// inside each coordinated write, and never tells a document of its own saves), so the document reverts without
    /// also asking the modification date: the date it recorded after its last save is read once that save's lock is
    /// gone, and may already be the next writer's — or the same, within the file system's timestamp granularity.
    nonisolated func revertForChange() {
        Task { @MainActor in await self.revertIfChangedOnDisk(knownChanged: true) }
    }

    /// A version appeared; a conflict version puts the document `.inConflict`.
    nonisolated func noteGained(_ version: PresentedItemVersion) {
        guard version.isConflict else { return }
        Task { @MainActor in self.updateConflicts { $0.insert(version.persistentIdentifier) } }
    }

    /// A version went away; when no conflict version is left the document leaves `.inConflict`.
    nonisolated func noteLost(_ version: PresentedItemVersion) {
        Task { @MainActor in self.updateConflicts { $0.remove(version.persistentIdentifier) } }
    }

    /// A conflict version was resolved; when none is left the document leaves `.inConflict`.
    nonisolated func noteResolved(_ version: PresentedItemVersion) {
        Task { @MainActor in self.updateConflicts { $0.remove(version.persistentIdentifier) } }
    }

    private func updateConflicts(_ change: (inout Set<String>) -> Void) {
        change(&unresolvedConflictVersions)
        if unresolvedConflictVersions.isEmpty {
            documentState.remove(.inConflict)
        } else {
            documentState.insert(.inConflict)
        }
    }

    /// Reverts to the file if another writer changed it since the document last read or wrote it — as
    /// `knownChanged` says, or else as its modification date shows — unless the document has unsaved changes (those
    /// are kept, and the next save is what others see).
    func revertIfChangedOnDisk(knownChanged: Bool = false) async {
        do {
            try await inFileAccessTurn {
                guard !documentState.contains(.closed), !hasUnsavedChanges else { return }
                guard let onDisk = FileIdentity.of(path: fileURL.path, members: true) else { return }
                guard knownChanged || onDisk != diskIdentity else { return }
                try await performRevert(to: fileURL, onlyIfClean: true)
            }
        } catch {
            errorsBeingHandled += 1
            handleError(error, userInteractionPermitted: false)
        }
    }
}
