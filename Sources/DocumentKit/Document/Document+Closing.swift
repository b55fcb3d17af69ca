import Foundation

extension Document {

    /// Closes the document, throwing the error of a failed last save (the document closes all the same).
    public func closeDocument() async throws {
        guard !documentState.contains(.closed) else { return }
        cancelAutosave()
        documentState.insert(.editingDisabled)
        var saveError: (any Error)?
        do { try await autosaveDocument(turn: serializer.reserve()) } catch { saveError = error }
        await serializer.run(serializer.reserve()) { markClosed() }
        if let saveError { throw saveError }
    }

    /// The end of ``close(completionHandler:)``, after its last save: closes in the next file-access turn.
    func finishClosing(saved: Bool, completionHandler: (@MainActor @Sendable (Bool) -> Void)?) {
        let turn = serializer.reserve()
        // Continues the close the caller started; its handler runs on the main actor.
        Task {
            await serializer.run(turn) { markClosed() }
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
        try await serializer.run(turn) { try await performRevert(to: url) }
    }

    func performRevert(to url: URL) async throws {
        guard !documentState.contains(.closed) else {
            throw DocumentError(.notOpen, "cannot revert \(fileURL.path): the document is closed")
        }
        guard url.isFileURL else { throw DocumentError(.readFailed, "cannot revert to \(url): not a file URL") }
        cancelAutosave()
        documentState.insert(.editingDisabled)
        do {
            try await readAndLoad(from: url)
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
