import DocumentKit
import Foundation

/// One grocery item, as the seeds' app keeps it from its fourth chapter on: a file package `Item_<uuid>.gro` holding
/// the item's name (`name.txt`) and, optionally, a picture of it (`image.png`).
///
/// Every edit goes through the document's undo manager, which marks the document changed and so autosaves it; an
/// unchanged image is carried from save to save without being written again.
@MainActor
public final class GroceryItemDocument: Document {
    /// What the item holds: its name and the PNG bytes of its image.
    public struct Contents: Hashable, Sendable, Codable {
        /// The item's name.
        public var name: String
        /// The item's image (PNG), if it has one.
        public var image: Data?

        /// Creates contents.
        public init(name: String, image: Data? = nil) {
            self.name = name
            self.image = image
        }
    }

    /// The package member holding the name.
    nonisolated public static let nameFile = "name.txt"
    /// The package member holding the image.
    nonisolated public static let imageFile = "image.png"
    /// The package member holding when the item was made (ISO 8601), the same on every device.
    nonisolated public static let createdFile = "created.txt"

    /// The item's name.
    public private(set) var name = ""
    /// The item's image (PNG bytes), if any.
    public private(set) var image: Data?
    /// When the item was made; set once, when it is created.
    public var creationDate: Date?
    /// The image's wrapper as last read or written, kept so that an unchanged image is not written again.
    private var imageWrapper: FileWrapper?

    /// The item's contents at this moment.
    public var contents: Contents { Contents(name: name, image: image) }

    /// Names the item `newName` (undoable, as "Rename").
    public func rename(to newName: String) {
        change(to: Contents(name: newName, image: image), actionName: "Rename")
    }

    /// Sets the item's image (undoable, as "Set Image"); `nil` removes it.
    public func setImage(_ png: Data?) {
        change(to: Contents(name: name, image: png), actionName: png == nil ? "Remove Image" : "Set Image")
    }

    /// Makes the item hold `contents`, registering the way back with the undo manager (so undo and redo run through
    /// here too) under `actionName`.
    public func change(to contents: Contents, actionName: String) {
        let before = self.contents
        guard before != contents else { return }
        apply(contents)
        undoManager.registerUndo(withTarget: self) { document in
            document.change(to: before, actionName: actionName)
        }
        undoManager.setActionName(actionName)
    }

    private func apply(_ contents: Contents) {
        name = contents.name
        if contents.image != image { imageWrapper = nil }
        image = contents.image
    }

    public override func contents(forType typeName: String) throws -> Any {
        var members = [Self.nameFile: FileWrapper(regularFileWithContents: Data(name.utf8))]
        if let creationDate {
            members[Self.createdFile] = FileWrapper(regularFileWithContents: Data(creationDate.ISO8601Format().utf8))
        }
        if let image {
            let wrapper = imageWrapper ?? FileWrapper(regularFileWithContents: image)
            imageWrapper = wrapper
            members[Self.imageFile] = wrapper
        }
        return FileWrapper(directoryWithFileWrappers: members)
    }

    public override func load(fromContents contents: Any, ofType typeName: String?) throws {
        guard let package = contents as? FileWrapper, let members = package.fileWrappers else {
            throw GroceryError(.damagedItem, "\(fileURL.lastPathComponent) is not a grocery item package")
        }
        guard let nameData = members[Self.nameFile]?.regularFileContents else {
            throw GroceryError(.damagedItem, "\(fileURL.lastPathComponent) has no \(Self.nameFile)")
        }
        name = String(decoding: nameData, as: UTF8.self)
        creationDate = members[Self.createdFile]?.regularFileContents.flatMap(Self.date)
        imageWrapper = members[Self.imageFile]
        image = imageWrapper?.regularFileContents
    }

    /// The date a `created.txt` holds.
    nonisolated static func date(_ data: Data) -> Date? {
        try? Date(
            String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), strategy: .iso8601)
    }
}
