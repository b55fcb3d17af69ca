import Foundation

/// The device's recent edits, kept between runs so that `grocery undo` and `grocery redo` can step through them
/// the way the document's undo manager does within one run. Images are kept by content hash beside the journal.
struct EditJournal {
    /// One edit of one item.
    struct Edit: Codable, Hashable {
        var fileName: String
        var actionName: String
        var before: GroceryItemDocument.Contents
        var after: GroceryItemDocument.Contents
    }

    private struct Stacks: Codable {
        var undo: [Edit] = []
        var redo: [Edit] = []
    }

    /// How many edits are kept.
    static let depth = 50

    let url: URL
    private var stacks: Stacks

    /// The journal in `folder` (empty when there is none yet).
    init(folder: URL) throws {
        url = folder.appendingPathComponent("journal.json")
        if let data = FileManager.default.contents(atPath: url.path) {
            stacks = (try? JSONDecoder().decode(Stacks.self, from: data)) ?? Stacks()
        } else {
            stacks = Stacks()
        }
    }

    var lastUndo: Edit? { stacks.undo.last }
    var lastRedo: Edit? { stacks.redo.last }

    /// Records a new edit; what could be redone is gone, as with an undo manager.
    mutating func record(_ edit: Edit) throws {
        stacks.undo.append(edit)
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

    /// Drops every edit of an item that is gone.
    mutating func forget(_ fileName: String) throws {
        stacks.undo.removeAll { $0.fileName == fileName }
        stacks.redo.removeAll { $0.fileName == fileName }
        try save()
    }

    private func save() throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try JSONEncoder().encode(stacks).write(to: url, options: .atomic)
    }
}
