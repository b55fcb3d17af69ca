import Foundation

extension Document {

    /// Closes the document, throwing the error of a failed last save.
    public func closeDocument() async throws {
        try await closeDocument(turn: serializer.reserve())
    }

    func closeDocument(turn: FileAccessSerializer.Ticket) async throws {
        try await serializer.run(turn) {
            guard !documentState.contains(.closed) else { return }
            cancelAutosave()
            documentState.insert(.editingDisabled)
            if errorsBeingHandled > 0 {
                userInteractionNoLongerPermitted(forError: DocumentError(.notOpen, "\(fileURL.path) is closing"))
            }
            var saveError: (any Error)?
            if hasUnsavedChanges {
                do { try await performSave(to: fileURL, for: .forOverwriting) } catch { saveError = error }
            }
            markClosed()
            if let saveError { throw saveError }
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
        cancelAutosave()
        documentState.insert(.editingDisabled)
        try await readAndLoad(from: url)
        if url.standardizedFileURL != fileURL { fileModificationDate = Self.modificationDate(of: fileURL) }
        changeTracking.apply(.cleared)
        undoManager.removeAllActions()
        documentState.remove(.editingDisabled)
    }
}
