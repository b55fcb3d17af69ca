import Foundation

extension Document {

    /// Closes the document, throwing the error of a failed last save (the document closes all the same).
    public func closeDocument() async throws {
        guard !documentState.contains(.closed) else { return }
        cancelAutosave()
        documentState.insert(.editingDisabled)
        var saveError: (any Error)?
        do { try await autosaveDocument(turn: serializer.reserve()) } catch { saveError = error }
        await inTurn(serializer.reserve()) { markClosed() }
        if let saveError { throw saveError }
    }

    /// The end of ``close(completionHandler:)``, after its last save: closes in the next file-access turn.
    func finishClosing(saved: Bool, completionHandler: (@MainActor @Sendable (Bool) -> Void)?) {
        let turn = serializer.reserve()
        // Continues the close the caller started; its handler runs on the main actor.
        Task {
            await inTurn(turn) { markClosed() }
            completionHandler?(saved)
        }
    }

    /// Leaves the document closed and no longer presenting its file.
    func markClosed() {
        cancelAutosave()
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
                documentState.remove(.editingDisabled)
                scheduleAutosaveIfNeeded()
                return
            }
        } catch {
            scheduleAutosaveIfNeeded()  // the unsaved changes are still there and must not wait for another edit
            throw error
        }
        if url.standardizedFileURL != fileURL {
            diskIdentity = DiskIdentity.of(fileURL)
            fileModificationDate = diskIdentity?.modificationDate
        }
        changeTracking.apply(.cleared)
        undoManager.removeAllActions()
        documentState.remove(.editingDisabled)
    }
}
