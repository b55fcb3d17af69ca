import Foundation

extension Document {

    /// Closes the document, throwing the error of a failed last save (the document closes all the same).
    public func closeDocument() async throws {
        guard !documentState.contains(.closed) else { return }
        beginClosing()
        let saveTurn = serializer.reserve()
        let closeTurn = serializer.reserve()
        var saveError: (any Error)?
        do { try await autosaveDocument(turn: saveTurn) } catch { saveError = error }
        await inTurn(closeTurn) { markClosed() }
        if let saveError { throw saveError }
    }

    /// The start of every close: the edits of this turn count, autosave stops, editing is disabled until closed.
    func beginClosing() {
        _undoManager?.closeAutomaticGroupNow()
        cancelAutosave()
        isClosing = true
        documentState.insert(.editingDisabled)
        if errorsBeingHandled > 0 {
            userInteractionNoLongerPermitted(forError: DocumentError(.notOpen, "\(fileURL.path) is closing"))
        }
    }

    /// Leaves the document closed and no longer presenting its file.
    func markClosed() {
        cancelAutosave()
        isClosing = false
        stopPresenting()
        var state = documentState
        state.insert(.closed)
        state.remove(.editingDisabled)
        state.remove(.progressAvailable)
        documentState = state
    }

    /// Reverts, throwing a ``DocumentError`` (or what ``load(fromContents:ofType:)`` threw) on failure.
    public func revertDocument(toContentsOf url: URL) async throws {
        try await revertDocument(toContentsOf: url, turn: serializer.reserve())
    }

    func revertDocument(toContentsOf url: URL, turn: FileAccessSerializer.Ticket) async throws {
        try await inTurn(turn) { try await performRevert(to: url) }
    }

    /// Reverts in the caller's turn. An automatic revert (`onlyIfClean`) gives way to an edit made while it read:
    /// the document keeps the edit, which its next save writes over what the other writer wrote.
    func performRevert(to url: URL, onlyIfClean: Bool = false) async throws {
        guard !documentState.contains(.closed) else {
            throw DocumentError(.notOpen, "cannot revert \(fileURL.path): the document is closed")
        }
        guard url.isFileURL else { throw DocumentError(.readFailed, "cannot revert to \(url): not a file URL") }
        cancelAutosave()
        documentState.insert(.editingDisabled)
        do {
            let loaded = try await readAndLoad(from: url) { !onlyIfClean || !self.hasUnsavedChanges }
            if !loaded {
                if !isClosing { documentState.remove(.editingDisabled) }
                scheduleAutosaveIfNeeded()
                return
            }
        } catch {
            scheduleAutosaveIfNeeded()  // the unsaved changes are still there and must not wait for another edit
            throw error
        }
        if url.standardizedFileURL != fileURL {
            diskIdentity = FileIdentity.of(path: fileURL.path, members: true)
            fileModificationDate = diskIdentity?.modificationDate
        }
        changeTracking.apply(.cleared)
        undoManager.removeAllActions()
        if !isClosing { documentState.remove(.editingDisabled) }
    }
}
