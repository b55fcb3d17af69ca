import Foundation
import RecordStore

/// Tag colours: an attribute of `Tag` since version 2 of the model. Like every attribute of the tag store, a colour
/// set on two devices at once settles the same way on both: the value of the later save (by its hybrid logical
/// clock stamp) is kept, while a change of another property made meanwhile — an item tagged — is kept as well.
extension GroceryApp {
    /// What ``setColor(_:ofTag:)`` did.
    public struct TagColoring: Hashable, Sendable {
        /// The tag's name as the store spells it.
        public var tag: String
        /// The tag's colour now, `nil` for none.
        public var color: String?
        /// Whether the colour changed (`false` when the tag had that colour already).
        public var changed: Bool
    }

    /// The longest colour, in characters.
    public static let maximumColorLength = 32

    /// Gives the tag `tagName` (in any case) the colour `color`, such as "blue" or "#3366FF", or takes its colour
    /// away with `nil`.
    ///
    /// ```swift
    /// try await app.setColor("blue", ofTag: "Dairy")
    /// ```
    /// - Throws: ``GroceryError/Code/invalidValue`` for a tag name ``tag(_:with:)`` refuses, or a colour that is
    ///   empty, longer than ``maximumColorLength`` or holds control characters; ``GroceryError/Code/noSuchTag``
    ///   when no tag has the name; ``GroceryError/Code/storeFailed``. Nothing is changed when it throws.
    @discardableResult
    public func setColor(_ color: String?, ofTag tagName: String) async throws -> TagColoring {
        let name = try Self.validTagName(tagName)
        let color = try color.map(Self.validColor)
        let context = try await tagStore().makeContext()
        return try Self.storeWork("saved") {
            guard let tag = try Self.tag(named: name, in: context) else {
                throw GroceryError(.noSuchTag, "no tag is named \"\(name)\"; `grocery tags` shows the tags")
            }
            guard tag.color != color else { return TagColoring(tag: tag.name, color: color, changed: false) }
            tag.color = color
            try context.save()
            return TagColoring(tag: tag.name, color: color, changed: true)
        }
    }

    /// The colour `color` stands for: trimmed, in Unicode's composed form.
    /// - Throws: ``GroceryError/Code/invalidValue`` for an empty colour, one longer than ``maximumColorLength``
    ///   characters, or one holding control characters.
    static func validColor(_ color: String) throws -> String {
        let trimmed = color.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCanonicalMapping
        guard !trimmed.isEmpty else {
            throw GroceryError(.invalidValue, "a tag's colour cannot be empty")
        }
        guard trimmed.count <= maximumColorLength else {
            throw GroceryError(
                .invalidValue,
                "a tag's colour is at most \(maximumColorLength) characters; this one has \(trimmed.count)")
        }
        guard !hasControlCharacters(trimmed) else {
            throw GroceryError(
                .invalidValue, "a tag's colour cannot hold control characters (such as a tab or a line break)")
        }
        return trimmed
    }
}
