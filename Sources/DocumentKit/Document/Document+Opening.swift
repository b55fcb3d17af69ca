import Foundation

extension Document {

    /// Opens the document, throwing a ``DocumentError`` (or what ``load(fromContents:ofType:)`` threw) on failure.
    public func openDocument() async throws {
        try await openDocument(turn: serializer.reserve())
    }

    func openDocument(turn: FileAccessSerializer.Ticket) async throws {
        try await serializer.run(turn) {
            guard documentState.contains(.closed) else {
                throw DocumentError(.alreadyOpen, "\(fileURL.path) is already open")
            }
            try await readAndLoad(from: fileURL)
            changeTracking.apply(.cleared)
            startPresenting()
            documentState.remove(.closed)
        }
    }

    /// Reads `url` off the main actor through ``read(from:)`` and records the file's modification date.
    func readAndLoad(from url: URL) async throws {
        let reader = HandOff(value: self)
        try await onFileAccessQueue { try reader.value.read(from: url) }
        fileModificationDate = Self.modificationDate(of: url)
    }

    /// Reads the item at `url` and passes its contents to ``load(fromContents:ofType:)`` on the main actor.
    ///
    /// Called on the document's file-access queue. The default reads with a coordinated read — `Data` for a file,
    /// a ``FileWrapper`` for a directory or package — and throws ``DocumentError`` (`.fileNotFound`, `.readFailed`).
    /// Override to read in your own way; call ``load(fromContents:ofType:)`` through `MainActor` yourself then.
    nonisolated func readWithCoordination(from url: URL) throws {
        let contents = try Self.readContents(at: url, presenter: self)
        let typeName = typeRegistry.type(forFileAt: url, isDirectory: contents is FileWrapper).identifier
        let handOff = HandOff(value: contents)
        try Self.onMainActor {
            do {
                try self.load(fromContents: handOff.value, ofType: typeName)
            } catch let error as DocumentError {
                throw error
            } catch {
                throw DocumentError(.readFailed, "could not load \(url.path)", underlying: error)
            }
        }
    }

    /// Reads `url` as `Data` or a `FileWrapper`, coordinated on behalf of `presenter`.
    nonisolated static func readContents(at url: URL, presenter: (any FilePresenter)?) throws -> Any {
        let coordinator = FileCoordinator(filePresenter: presenter)
        let read: () throws -> Any = {
            try coordinator.coordinate(readingItemAt: url, options: .withoutChanges) { url in
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                    throw DocumentError(.fileNotFound, "no file at \(url.path)")
                }
                // No save of this file runs while we hold the read: temporary files are leftovers of killed saves.
                SafeFileWriter.removeStaleTemporarySiblings(of: url)
                if isDirectory.boolValue { return try FileWrapper(url: url, options: .immediate) }
                return try Data(contentsOf: url)
            }
        }
        do {
            return try read()
        } catch let error as DocumentError {
            throw error
        } catch {
            throw DocumentError(.readFailed, "could not read \(url.path)", underlying: error)
        }
    }

    /// Runs `body` on the main actor, synchronously, from any thread.
    nonisolated static func onMainActor<T: Sendable>(_ body: @MainActor () throws -> T) throws -> T {
        if Thread.isMainThread { return try MainActor.assumeIsolated(body) }
        return try DispatchQueue.main.sync { try MainActor.assumeIsolated(body) }
    }
}
