import Foundation

/// What went wrong in the grocery app, and what to do about it.
public struct GroceryError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Hashable, Sendable {
        /// No item matches what was asked for.
        case noSuchItem
        /// Several items match; say which with more of its name or id.
        case ambiguousItem
        /// The item's package is damaged or not a grocery item.
        case damagedItem
        /// The item is not downloaded and could not be.
        case downloadFailed
        /// A file given as an image is not a PNG.
        case notAnImage
        /// The item has no conflict, or no such version.
        case noSuchVersion
        /// Nothing to undo or redo, or the item changed since.
        case nothingToUndo
        /// A value out of range (an empty name, an unknown sort order, a tag name with a control character).
        case invalidValue
        /// The document could not be opened or saved.
        case documentFailed
        /// No tag has the name, or the item does not have the tag.
        case noSuchTag
        /// The tag store could not be opened, read or saved.
        case storeFailed
    }

    /// The kind of failure.
    public let code: Code
    /// What happened and what to do.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
