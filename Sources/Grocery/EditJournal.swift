import Foundation

/// The device's recent edits, kept between runs so that `grocery undo` and `grocery redo` can step through them
/// the way the document's undo manager does within one run. Images are kept as files beside the journal, which
/// names them; an image no edit names any more is removed.
struct EditJournal {
    /// One edit of one item, with the contents before and after.
    struct Edit: Hashable {
        var fileName: String
        var actionName: String
        var before: GroceryItemDocument.Contents
        var after: GroceryItemDocument.Contents
    }

    /// An item's contents as the journal keeps them: the image by the name of its file.
    private struct StoredContents: Codable, Hashable {
        var name: String
        var image: String?
    }

    private struct StoredEdit: Codable, Hashable {
        var fileName: String
        var actionName: String
        var before: StoredContents
        var after: StoredContents
    }

    private struct Stacks: Codable {
        var undo: [StoredEdit] = []
        var redo: [StoredEdit] = []
    }

    /// How many edits are kept.
    static let depth = 50

    let url: URL
    private let images: URL
    private var stacks: Stacks

    /// The journal in `folder` (empty when there is none yet, or it cannot be read).
    init(folder: URL) throws {
        url = folder.appendingPathComponent("journal.json")
        images = folder.appendingPathComponent("images", isDirectory: true)
        if let data = FileManager.default.contents(atPath: url.path) {
            stacks = (try? JSONDecoder().decode(Stacks.self, from: data)) ?? Stacks()
        } else {
            stacks = Stacks()
        }
    }

    var canUndo: Bool { !stacks.undo.isEmpty }
    var canRedo: Bool { !stacks.redo.isEmpty }
    var lastUndo: Edit? { stacks.undo.last.flatMap(load) }
    var lastRedo: Edit? { stacks.redo.last.flatMap(load) }

    /// Records a new edit; what could be redone is gone, as with an undo manager.
    mutating func record(_ edit: Edit) throws {
        stacks.undo.append(
            StoredEdit(
                fileName: edit.fileName, actionName: edit.actionName, before: try store(edit.before),
                after: try store(edit.after)))
        if stacks.undo.count > Self.depth { stacks.undo.removeFirst(stacks.undo.count - Self.depth) }
        stacks.redo.removeAll()
        try save()
    }

    /// Moves the last edit from the undo stack to the redo stack.
    mutating func didUndo() throws {
        guard let edit = stacks.undo.popLast() else { return }
        stacks.redo.append(edit)
        try save()
    }

    /// Moves the last undone edit back to the undo stack.
    mutating func didRedo() throws {
        guard let edit = stacks.redo.popLast() else { return }
        stacks.undo.append(edit)
        try save()
    }

    /// Drops the last edit of the undo stack (`redo: false`) or of the redo stack: it can no longer be applied.
    mutating func dropLast(redo: Bool) throws {
        if redo { _ = stacks.redo.popLast() } else { _ = stacks.undo.popLast() }
        try save()
    }

    /// Drops every edit of an item that is gone.
    mutating func forget(_ fileName: String) throws {
        stacks.undo.removeAll { $0.fileName == fileName }
        stacks.redo.removeAll { $0.fileName == fileName }
        try save()
    }

    private func store(_ contents: GroceryItemDocument.Contents) throws -> StoredContents {
        guard let image = contents.image else { return StoredContents(name: contents.name, image: nil) }
        // An image the journal holds already is named again rather than written twice.
        let named = (stacks.undo + stacks.redo).flatMap { [$0.before.image, $0.after.image] }.compactMap { $0 }
        for name in Set(named) where FileManager.default.contents(atPath: imageURL(name).path) == image {
            return StoredContents(name: contents.name, image: name)
        }
        let name = "\(UUID().uuidString).png"
        try FileManager.default.createDirectory(at: images, withIntermediateDirectories: true)
        try image.write(to: imageURL(name), options: .atomic)
        return StoredContents(name: contents.name, image: name)
    }

    private func load(_ edit: StoredEdit) -> Edit? {
        func contents(_ stored: StoredContents) -> GroceryItemDocument.Contents? {
            guard let image = stored.image else { return .init(name: stored.name) }
            guard let data = FileManager.default.contents(atPath: imageURL(image).path) else { return nil }
            return .init(name: stored.name, image: data)
        }
        guard let before = contents(edit.before), let after = contents(edit.after) else { return nil }
        return Edit(fileName: edit.fileName, actionName: edit.actionName, before: before, after: after)
    }

    private func imageURL(_ name: String) -> URL { images.appendingPathComponent(name) }

    /// Writes the journal, then removes the images no edit names.
    private func save() throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try JSONEncoder().encode(stacks).write(to: url, options: .atomic)
        let named = Set((stacks.undo + stacks.redo).flatMap { [$0.before.image, $0.after.image] }.compactMap { $0 })
        for file in (try? FileManager.default.contentsOfDirectory(atPath: images.path)) ?? []
        where !named.contains(file) {
            try? FileManager.default.removeItem(at: imageURL(file))
        }
    }
}
