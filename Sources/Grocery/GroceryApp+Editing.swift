import DocumentKit
import Foundation
import Synchronization
import UbiquityKit

extension GroceryApp {
    /// Adds an item named `name`: a new `Item_<uuid>.gro` document in the container, saved for creating.
    @discardableResult
    public func add(_ name: String, image: Data? = nil) async throws -> GroceryEntry {
        let name = try Self.validName(name)
        if let image { try Self.checkPNG(image) }
        let url = try await documents().appendingPathComponent(GroceryItemType.newFileName(), isDirectory: true)
        let document = GroceryItemDocument(fileURL: url)
        document.creationDate = Date()
        document.undoManager.disableUndoRegistration()
        document.change(to: .init(name: name, image: image), actionName: "New Item")
        document.undoManager.enableUndoRegistration()
        do {
            try await document.saveDocument(to: url, for: .forCreating)
        } catch {
            throw GroceryError(.documentFailed, "could not save the new item: \(error)")
        }
        try await document.closeDocument()
        return Self.savedEntry(url, document.contents, created: document.creationDate)
    }

    /// Renames the item `reference` names; undoable with ``undo()``.
    @discardableResult
    public func rename(_ reference: String, to newName: String) async throws -> GroceryEntry {
        let newName = try Self.validName(newName)
        return try await edit(reference) { $0.rename(to: newName) }
    }

    /// Gives the item `reference` names the image in the PNG file at `file`; undoable with ``undo()``.
    @discardableResult
    public func setImage(_ reference: String, from file: URL) async throws -> GroceryEntry {
        guard let png = FileManager.default.contents(atPath: file.path) else {
            throw GroceryError(.notAnImage, "cannot read \(file.path)")
        }
        try Self.checkPNG(png)
        return try await edit(reference) { $0.setImage(png) }
    }

    /// Opens the item, makes `change` (which goes through the document's undo manager), saves, and journals it for
    /// ``undo()``.
    private func edit(_ reference: String, _ change: (GroceryItemDocument) -> Void) async throws -> GroceryEntry {
        let entry = try await find(reference)
        let document = try await open(entry)
        let before = document.contents
        change(document)
        let actionName = document.undoManager.undoActionName
        let after = document.contents
        let created = document.creationDate
        try await save(document)
        if before != after {
            var journal = try self.journal
            try journal.record(
                EditJournal.Edit(fileName: entry.fileName, actionName: actionName, before: before, after: after))
        }
        var saved = Self.savedEntry(entry.url, after, created: created)
        saved.hasUnresolvedConflicts = entry.hasUnresolvedConflicts
        return saved
    }

    /// The entry of an item just saved here with `contents`.
    static func savedEntry(_ url: URL, _ contents: GroceryItemDocument.Contents, created: Date?) -> GroceryEntry {
        let size = Int64(contents.name.utf8.count + (contents.image?.count ?? 0))
        return GroceryEntry(saved: url, contents: contents, size: size, creationDate: created)
    }

    /// Deletes the item `reference` names, on every device: a coordinated removal of its package (a placeholder is
    /// downloaded first, so that what is deleted is the item as the service has it).
    public func delete(_ reference: String) async throws {
        try await delete(try await find(reference))
    }

    /// Deletes the item of `entry`, on every device, and its record in the tag store (its links go with it; its tags
    /// stay).
    public func delete(_ entry: GroceryEntry) async throws {
        if entry.downloadingStatus == .notDownloaded { try await download(entry) }
        let url = entry.url
        try await Task.detached {
            try FileCoordinator(filePresenter: nil).coordinate(writingItemAt: url, options: .forDeleting) {
                try FileManager.default.removeItem(at: $0)
            }
        }.value
        var journal = try self.journal
        try journal.forget(entry.fileName)
        await forgetTags(of: entry)
    }

    /// The item's document, open — its latest version downloaded first when this device does not have it (a
    /// placeholder, or an older copy), with `progress` told the percent done along the way. Offline, an older copy
    /// is opened as it is.
    public func open(
        _ entry: GroceryEntry, progress: @escaping @Sendable (Double) -> Void = { _ in }
    ) async throws -> GroceryItemDocument {
        switch entry.downloadingStatus {
        case .notDownloaded: try await download(entry, progress: progress)
        case .downloaded: try? await download(entry, progress: progress)
        case .current: break
        }
        let document = GroceryItemDocument(fileURL: entry.url)
        do {
            try await document.openDocument()
        } catch {
            throw GroceryError(.documentFailed, "could not open \(entry.displayName): \(error)")
        }
        return document
    }

    /// Downloads the item's latest version, telling `progress` the percent done.
    /// - Throws: ``GroceryError/Code/downloadFailed`` when the download fails or takes over `timeout`.
    public func download(
        _ entry: GroceryEntry, timeout: Duration = .seconds(600),
        progress: @escaping @Sendable (Double) -> Void = { _ in }
    ) async throws {
        let url = entry.url
        let outcome = Mutex<Result<Void, any Error>?>(nil)
        let download = Task {
            do {
                try await FileManager.default.startDownloadingUbiquitousItem(at: url)
                outcome.withLock { $0 = .success(()) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
        }
        defer { download.cancel() }
        let deadline = ContinuousClock.now + timeout
        var last = -1.0
        while ContinuousClock.now < deadline {
            if let finished = outcome.withLock({ $0 }) {
                if case .failure(let error) = finished {
                    throw GroceryError(
                        .downloadFailed,
                        "could not download \(entry.displayName): \(error); check the connection and try again")
                }
                progress(100)
                return
            }
            if let percent = (try? url.ubiquitousResourceValues())?.percentDownloaded, percent != last, percent < 100 {
                progress(percent)
                last = percent
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw GroceryError(.downloadFailed, "the download of \(entry.displayName) took over \(timeout); try again")
    }

    /// Saves and closes `document`.
    func save(_ document: GroceryItemDocument) async throws {
        do {
            try await document.closeDocument()
        } catch {
            throw GroceryError(.documentFailed, "could not save \(document.name): \(error)")
        }
    }

    /// The entry of the item at `url`, as this device knows it now.
    public func entry(at url: URL) async throws -> GroceryEntry {
        let fileName = url.lastPathComponent
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let found = try await items().first(where: { $0.fileName == fileName }) { return found }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw GroceryError(.noSuchItem, "\(fileName) is not among the container's items")
    }

    static func validName(_ name: String) throws -> String {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 1024, !trimmed.contains("\0") else {
            throw GroceryError(.invalidValue, "an item's name is 1 to 1,024 bytes of text")
        }
        return trimmed
    }

    static func checkPNG(_ data: Data) throws {
        guard data.starts(with: PNGImage.signature) else {
            throw GroceryError(.notAnImage, "the image is not a PNG file (it does not start with PNG's signature)")
        }
    }
}
