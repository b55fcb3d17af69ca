import Foundation

extension Document {

    /// Opens the document, throwing a ``DocumentError`` (or what ``load(fromContents:ofType:)`` threw) on failure.
    public func openDocument() async throws {
        try await openDocument(turn: serializer.reserve())
    }

    func openDocument(turn: FileAccessSerializer.Ticket) async throws {
        try await inTurn(turn) {
            guard documentState.contains(.closed) else {
                throw DocumentError(.alreadyOpen, "\(fileURL.path) is already open")
            }
            try await downloadIfNeeded()
            try await readAndLoad(from: fileURL)
            wasDeleted = false
            changeTracking.apply(.cleared)
            startPresenting()
            documentState.remove(.closed)
        }
    }

    /// Reads `url` off the main actor through ``read(from:)``, then loads what it read on the main actor and records
    /// the item's identity as it was read. Returns `false`, loading nothing, when `stillWanted` says no once the
    /// contents are in (an automatic revert that an edit overtook: the edit wins, and is saved next).
    @discardableResult
    func readAndLoad(from url: URL, stillWanted: @MainActor () -> Bool = { true }) async throws -> Bool {
        let reader = HandOff(value: self)
        let read = ReadHandOff()
        try await onFileAccessQueue { try ReadHandOff.$current.withValue(read) { try reader.value.read(from: url) } }
        if let contents = read.contents {
            guard stillWanted() else { return false }
            do {
                try load(fromContents: contents.value, ofType: read.typeName)
            } catch let error as DocumentError {
                throw error
            } catch {
                throw DocumentError(.readFailed, "could not load \(url.path)", underlying: error)
            }
        }
        diskIdentity = read.identity ?? FileIdentity.of(path: url.path, members: true)
        fileModificationDate = diskIdentity?.modificationDate
        return true
    }

    /// The default ``read(from:)``: a coordinated read, whose contents go to ``load(fromContents:ofType:)`` on the
    /// main actor — handed back to the awaiting open or revert, or, when called from elsewhere, through the main queue.
    nonisolated func readWithCoordination(from url: URL) throws {
        var identity: FileIdentity?
        let contents = try Self.readContents(at: url, presenter: self) {
            identity = FileIdentity.of(path: $0.path, members: true)
        }
        let typeName = typeRegistry.type(forFileAt: url, isDirectory: contents is FileWrapper).identifier
        if let read = ReadHandOff.current {
            read.contents = HandOff(value: contents)
            read.typeName = typeName
            read.identity = identity
            return
        }
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
    nonisolated static func readContents(
        at url: URL,
        presenter: (any FilePresenter)?,
        whileReading: (URL) -> Void = { _ in }
    ) throws -> Any {
        let coordinator = FileCoordinator(filePresenter: presenter)
        do {
            return try coordinator.coordinate(readingItemAt: url, options: .withoutChanges) { url in
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                    throw DocumentError(.fileNotFound, "no file at \(url.path)")
                }
                // No save of this file runs while we hold the read: temporary files are leftovers of killed saves.
                SafeFileWriter.removeStaleTemporarySiblings(of: url)
                whileReading(url)
                if isDirectory.boolValue { return try FileWrapper(url: url, options: .immediate) }
                return try Data(contentsOf: url)
            }
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

/// Carries what the default ``Document/read(from:)`` read, from the file-access queue back to the open or revert
/// awaiting it on the main actor, which calls ``Document/load(fromContents:ofType:)`` itself.
final class ReadHandOff: @unchecked Sendable {
    // @unchecked Sendable: written on the file-access queue, then read on the main actor only after the hop back,
    // which orders the two.
    @TaskLocal static var current: ReadHandOff?
    var contents: HandOff<Any>?
    var typeName: String?
    var identity: FileIdentity?
}
