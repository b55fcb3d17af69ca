import DocumentKit
import Foundation
import UbiquityKit

extension GroceryApp {
    /// Adds an item named `name`: a new `Item_<uuid>.gro` document in the container, saved for creating.
    @discardableResult
    public func add(_ name: String, image: Data? = nil) async throws -> GroceryEntry {
        let name = try Self.validName(name)
        if let image { try Self.checkPNG(image) }
        let url = try await documents().appendingPathComponent(GroceryItemType.newFileName(), isDirectory: true)
        let document = GroceryItemDocument(fileURL: url)
        document.undoManager.disableUndoRegistration()
        document.change(to: .init(name: name, image: image), actionName: "New Item")
        document.undoManager.enableUndoRegistration()
        do {
            try await document.saveDocument(to: url, for: .forCreating)
        } catch {
            throw GroceryError(.documentFailed, "could not save the new item: \(error)")
        }
        try await document.closeDocument()
        return Self.savedEntry(url, document.contents)
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
        try await save(document)
        if before != after {
            var journal = try self.journal
            try journal.record(
                EditJournal.Edit(fileName: entry.fileName, actionName: actionName, before: before, after: after))
        }
        var saved = Self.savedEntry(entry.url, after)
        saved.hasUnresolvedConflicts = entry.hasUnresolvedConflicts
        return saved
    }

    /// The entry of an item just saved here with `contents`.
    static func savedEntry(_ url: URL, _ contents: GroceryItemDocument.Contents) -> GroceryEntry {
        let size = Int64(contents.name.utf8.count + (contents.image?.count ?? 0))
        return GroceryEntry(saved: url, contents: contents, size: size)
    }

    /// Deletes the item `reference` names, on every device: a coordinated removal of its package.
    public func delete(_ reference: String) async throws {
        let entry = try await find(reference)
        let url = entry.url
        try await Task.detached {
            try FileCoordinator(filePresenter: nil).coordinate(writingItemAt: url, options: .forDeleting) {
                try FileManager.default.removeItem(at: $0)
            }
        }.value
        var journal = try self.journal
        try journal.forget(entry.fileName)
    }

    /// The item's document, open — downloaded first when it is a placeholder, with `progress` told the percent
    /// done along the way.
    public func open(
        _ entry: GroceryEntry, progress: @escaping @Sendable (Double) -> Void = { _ in }
    ) async throws -> GroceryItemDocument {
        if entry.downloadingStatus == .notDownloaded { try await download(entry, progress: progress) }
        let document = GroceryItemDocument(fileURL: entry.url)
        do {
            try await document.openDocument()
        } catch {
            throw GroceryError(.documentFailed, "could not open \(entry.displayName): \(error)")
        }
        return document
    }

    /// Downloads a placeholder's contents, telling `progress` the percent done.
    public func download(_ entry: GroceryEntry, progress: @escaping @Sendable (Double) -> Void = { _ in }) async throws
    {
        let url = entry.url
        try await FileManager.default.startDownloadingUbiquitousItem(at: url)
        var last = -1.0
        while true {
            let values = try url.ubiquitousResourceValues()
            if let error = values.downloadingError {
                throw GroceryError(.downloadFailed, "could not download \(entry.fileName): \(error.message)")
            }
            if values.downloadingStatus != .notDownloaded {
                progress(100)
                return
            }
            let percent = values.percentDownloaded ?? 0
            if percent != last {
                progress(percent)
                last = percent
            }
            try await Task.sleep(for: .milliseconds(50))
        }
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
