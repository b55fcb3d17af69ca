import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Whether the save being asked for comes from ``Document/autosave(completionHandler:)``, which saves only what is
/// still unsaved when the save's turn comes (the save's task inherits the value).
enum AutosaveScope {
    @TaskLocal static var isAutosave = false
}

extension Document {

    /// Saves the document, throwing a ``DocumentError`` (or what the subclass threw) on failure.
    public func saveDocument(to url: URL, for saveOperation: SaveOperation) async throws {
        _undoManager?.closeAutomaticGroupNow()
        try await saveDocument(to: url, for: saveOperation, turn: serializer.reserve(), ownFile: isOwnFile(url))
    }

    func saveDocument(
        to url: URL,
        for saveOperation: SaveOperation,
        turn: FileAccessSerializer.Ticket,
        ownFile: Bool
    ) async throws {
        let isAutosave = AutosaveScope.isAutosave && saveOperation == .forOverwriting && ownFile
        try await inTurn(turn) {
            // (After a deletion the save goes on, to report that it was dropped.)
            if isAutosave && !wasDeleted && (!hasUnsavedChanges || documentState.contains(.closed)) { return }
            try await performSave(to: url, for: saveOperation, ownFile: ownFile)
        }
    }

    /// Whether `url` names the document's own file now — decided when a save is asked for, so that a save of the
    /// document's file that waits behind a move goes to where the file went, and one behind a deletion is dropped.
    func isOwnFile(_ url: URL) -> Bool {
        let url = url.standardizedFileURL
        return url == fileURL || url == presentedURL.withLock { $0 }
    }

    /// An autosave in `turn`: saves over the document's file if, by then, the document is still open and dirty; its
    /// URL is read in the turn, so a move or deletion that came first is honoured.
    func autosaveDocument(turn: FileAccessSerializer.Ticket) async throws {
        try await inTurn(turn) {
            guard hasUnsavedChanges, !documentState.contains(.closed) else { return }
            try await performSave(to: fileURL, for: .forOverwriting, ownFile: true)
        }
    }

    /// The save itself, inside the caller's file-access turn.
    func performSave(to requestedURL: URL, for saveOperation: SaveOperation, ownFile: Bool = false) async throws {
        var url = requestedURL.standardizedFileURL
        if saveOperation == .forOverwriting && ownFile {
            // A save of the document's own file, which another writer may have moved or deleted since.
            if wasDeleted {
                throw DocumentError(.closedByDeletion, "\(url.path) was deleted by another writer; nothing was saved")
            }
            let current = presentedURL.withLock { $0 }
            if current != url {
                url = current
                fileURL = current
            }
        }
        let destination = url
        if saveOperation == .forOverwriting { try checkReplaceable(destination) }
        let token = changeCountToken(for: saveOperation)
        let typeName = savingFileType ?? fileType ?? DocumentType.dataIdentifier
        let snapshot: HandOff<Any>
        do {
            snapshot = HandOff(value: try contents(forType: typeName))
        } catch {
            documentState.insert(.savingError)
            throw error
        }
        if saveOperation == .forOverwriting, let existing = Self.kind(of: url), existing == .directory,
            !((snapshot.value as? FileWrapper)?.isDirectory ?? false)
        {
            documentState.insert(.savingError)
            throw DocumentError(
                .kindMismatch, "cannot save a flat document over the directory at \(url.path); nothing was changed")
        }
        let writer = HandOff(value: self)
        let report = SaveReport()
        do {
            try await onFileAccessQueue {
                try SaveReport.$current.withValue(report) {
                    let document = writer.value
                    let attributes = try document.fileAttributesToWrite(to: destination, for: saveOperation)
                    try document.writeContents(
                        snapshot.value, andAttributes: attributes, safelyTo: destination, for: saveOperation)
                }
            }
        } catch {
            documentState.insert(.savingError)
            throw error
        }
        if url != fileURL {
            fileURL = url
            presentedURL.withLock { $0 = url }
        }
        diskIdentity = report.identity ?? FileIdentity.of(path: url.path, members: true)
        fileModificationDate = diskIdentity?.modificationDate
        updateChangeCount(withToken: token, for: saveOperation)
        if documentState.contains(.closed) && saveOperation == .forCreating {
            wasDeleted = false
            startPresenting()
            documentState.remove(.closed)
        }
        documentState.remove(.savingError)
    }

    /// Writes `contents` to `url` safely: a coordinated write that builds the new item in a temporary sibling through
    /// ``writeContents(_:to:for:originalContentsURL:)``, applies `additionalFileAttributes`, flushes it, and renames
    /// it over `url`, so a crash at any instant leaves the old or the new item. Called on the file-access queue.
    nonisolated func writeSafely(
        _ contents: Any,
        andAttributes additionalFileAttributes: [AnyHashable: Any]? = nil,
        safelyTo url: URL,
        for saveOperation: SaveOperation
    ) throws {
        let coordinator = FileCoordinator(filePresenter: self)
        let options: FileCoordinator.WritingOptions = saveOperation == .forCreating ? .forReplacing : []
        try coordinator.coordinate(writingItemAt: url, options: options) { url in
            let exists = FileManager.default.fileExists(atPath: url.path)
            if saveOperation == .forCreating && exists {
                throw DocumentError(.fileExists, "cannot create \(url.path): an item is already there")
            }
            var writtenAt: URL?
            let originalMode = exists ? Self.permissions(of: url) : nil
            do {
                try SafeFileWriter.replaceItem(at: url, synchronizesContents: false) { temporaryURL in
                    writtenAt = temporaryURL
                    let report = SaveReport.current ?? SaveReport()
                    report.isDurable = false
                    try SaveReport.$current.withValue(report) {
                        try self.writeContents(
                            contents, to: temporaryURL, for: saveOperation, originalContentsURL: exists ? url : nil)
                    }
                    // An override that wrote by itself has not flushed what it wrote: flush it all.
                    if !report.isDurable { try SafeFileWriter.synchronizeTree(at: temporaryURL) }
                    // Keep the file's permissions (a private diary stays private) unless asked for others.
                    let setsPermissions = additionalFileAttributes?[FileAttributeKey.posixPermissions.rawValue] != nil
                    if let originalMode, !setsPermissions { chmod(temporaryURL.path, originalMode) }
                    if let additionalFileAttributes, !additionalFileAttributes.isEmpty {
                        let attributes = Dictionary(
                            uniqueKeysWithValues: additionalFileAttributes.compactMap {
                                key, value in (key as? String).map { (FileAttributeKey($0), value) }
                            })
                        try FileManager.default.setAttributes(attributes, ofItemAtPath: temporaryURL.path)
                        try SafeFileWriter.synchronizeItem(at: temporaryURL)
                    }
                }
            } catch let error as DocumentError {
                throw error
            } catch {
                throw DocumentError(.writeFailed, "could not save \(url.path)", underlying: error)
            }
            if let wrapper = contents as? FileWrapper, let writtenAt {
                wrapper.settleOrigins(movedFrom: writtenAt, to: url)
            }
            SaveReport.current?.identity = FileIdentity.of(path: url.path, members: true)
        }
    }

    /// Writes `contents` (`Data` or ``FileWrapper``) to `url`, which does not exist yet. For a package, members that
    /// did not change are hard-linked from `originalContentsURL` instead of written again. Called on the file-access
    /// queue; the caller makes the result durable and moves it into place.
    nonisolated func writeItem(
        _ contents: Any,
        to url: URL,
        for saveOperation: SaveOperation,
        originalContentsURL: URL?
    ) throws {
        switch contents {
        case let data as Data:
            try SafeFileWriter.writeFile(data, to: url)
            SaveReport.current?.isDurable = true
        case let wrapper as FileWrapper:
            try wrapper.write(to: url, options: .withNameUpdating, originalContentsURL: originalContentsURL)
            SaveReport.current?.isDurable = true
        default:
            throw DocumentError(
                .invalidContents, "contents(forType:) returned \(type(of: contents)); expected Data or FileWrapper")
        }
    }
}

/// What a save's background write tells the main actor: whether the item written into the temporary location is
/// already flushed (the default writers — `Data` through `SafeFileWriter.writeFile`, packages through
/// `FileWrapper.write` — sync every file and directory they create, so the save need not sync them again; an
/// override's writes are synced by the save), and the identity of the item just after it landed, taken while the
/// coordinated write still excludes other writers.
final class SaveReport: @unchecked Sendable {
    // @unchecked Sendable: filled on the file-access queue, read on the main actor only after the hop back, which
    // orders the two.
    @TaskLocal static var current: SaveReport?
    var isDurable = false
    var identity: FileIdentity?
}

extension Document {
    enum ItemKind { case file, directory, other }

    /// What is at `url`, not following a final symbolic link; `nil` if nothing.
    nonisolated static func kind(of url: URL) -> ItemKind? {
        var status = stat()
        guard lstat(url.path, &status) == 0 else { return nil }
        switch status.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    /// The permission bits of the item at `url`.
    nonisolated static func permissions(of url: URL) -> mode_t? {
        var status = stat()
        guard lstat(url.path, &status) == 0 else { return nil }
        return status.st_mode & 0o7777
    }

    /// Refuses to overwrite a directory that is not this document's own package: a mistyped path must never
    /// replace (and so delete) a folder of the user's.
    func checkReplaceable(_ url: URL) throws {
        guard Self.kind(of: url) == .directory else { return }
        let ownOpenItem = url == fileURL && !documentState.contains(.closed)
        if ownOpenItem || typeRegistry.isPackageExtension(url.pathExtension) { return }
        documentState.insert(.savingError)
        throw DocumentError(
            .kindMismatch,
            "refusing to replace the folder at \(url.path): it is not a package of this document; nothing was changed")
    }
}
