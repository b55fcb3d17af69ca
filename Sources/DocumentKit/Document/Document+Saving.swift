import Foundation

extension Document {

    /// Saves the document, throwing a ``DocumentError`` (or what the subclass threw) on failure.
    public func saveDocument(to url: URL, for saveOperation: SaveOperation) async throws {
        try await saveDocument(to: url, for: saveOperation, turn: serializer.reserve())
    }

    func saveDocument(to url: URL, for saveOperation: SaveOperation, turn: FileAccessSerializer.Ticket) async throws {
        try await serializer.run(turn) { try await performSave(to: url, for: saveOperation) }
    }

    /// The save itself, inside the caller's file-access turn.
    func performSave(to url: URL, for saveOperation: SaveOperation) async throws {
        let url = url.standardizedFileURL
        let token = changeCountToken(for: saveOperation)
        let typeName = savingFileType ?? fileType ?? DocumentType.dataIdentifier
        let snapshot: HandOff<Any>
        do {
            snapshot = HandOff(value: try contents(forType: typeName))
        } catch {
            documentState.insert(.savingError)
            throw error
        }
        let writer = HandOff(value: self)
        do {
            try await onFileAccessQueue {
                let document = writer.value
                let attributes = try document.fileAttributesToWrite(to: url, for: saveOperation)
                try document.writeContents(snapshot.value, andAttributes: attributes, safelyTo: url, for: saveOperation)
            }
        } catch {
            documentState.insert(.savingError)
            throw error
        }
        if url != fileURL { fileURL = url }
        fileModificationDate = Self.modificationDate(of: url)
        updateChangeCount(withToken: token, for: saveOperation)
        if documentState.contains(.closed) && saveOperation == .forCreating {
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
            do {
                try SafeFileWriter.replaceItem(at: url, synchronizesContents: false) { temporaryURL in
                    writtenAt = temporaryURL
                    let durability = DurableWriteReport()
                    try DurableWriteReport.$current.withValue(durability) {
                        try self.writeContents(
                            contents, to: temporaryURL, for: saveOperation, originalContentsURL: exists ? url : nil)
                    }
                    // An override that wrote by itself has not flushed what it wrote: flush it all.
                    if !durability.isDurable { try SafeFileWriter.synchronizeTree(at: temporaryURL) }
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
            DurableWriteReport.current?.isDurable = true
        case let wrapper as FileWrapper:
            try wrapper.write(to: url, options: .withNameUpdating, originalContentsURL: originalContentsURL)
            DurableWriteReport.current?.isDurable = true
        default:
            throw DocumentError(
                .invalidContents, "contents(forType:) returned \(type(of: contents)); expected Data or FileWrapper")
        }
    }
}

/// Tells a safe save whether the item written into its temporary location is already flushed to disk: the default
/// writers (`Data` through `SafeFileWriter.writeFile`, packages through `FileWrapper.write`) sync every file and
/// directory they create, so the save need not sync them again; an override's writes are synced by the save.
final class DurableWriteReport: @unchecked Sendable {
    // @unchecked Sendable: created, set and read on the one thread running a save's write, never shared.
    @TaskLocal static var current: DurableWriteReport?
    var isDurable = false
}
