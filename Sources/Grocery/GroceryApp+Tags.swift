import Foundation
import Logging
import RecordStore
import UbiquityKit

/// Tags, the book's chapter 8: items and tags many-to-many, kept in the tag store (see ``GroceryTagModel``) while
/// the items stay documents. A tag is found by its name in any case; a new tag keeps the spelling it was given.
extension GroceryApp {
    /// A tag, its colour and the items that have it, in the list's order.
    public struct TagSummary: Hashable, Sendable {
        /// The tag's name.
        public var name: String
        /// The tag's colour, `nil` when it has none (see ``setColor(_:ofTag:)``).
        public var color: String?
        /// The items with the tag whose documents this device knows (placeholders included).
        public var items: [GroceryEntry]
    }

    /// What ``tag(_:with:)`` or ``untag(_:from:)`` did.
    public struct Tagging: Hashable, Sendable {
        /// The item.
        public var entry: GroceryEntry
        /// The tag's name as the store spells it.
        public var tag: String
        /// Whether the item's tags changed (`false` when it had the tag already).
        public var changed: Bool
    }

    /// The longest tag name, in characters.
    public static let maximumTagNameLength = 64

    /// Gives the item `reference` names the tag `tagName`, making the tag if no tag has that name (in any case).
    /// - Throws: ``GroceryError/Code/invalidValue`` for a name that is empty, longer than
    ///   ``maximumTagNameLength`` or holds control characters; ``GroceryError/Code/noSuchItem``;
    ///   ``GroceryError/Code/storeFailed``. Nothing is changed when it throws.
    @discardableResult
    public func tag(_ reference: String, with tagName: String) async throws -> Tagging {
        let name = try Self.validTagName(tagName)
        let entry = try await find(reference)
        let context = try await tagStore().makeContext()
        return try Self.storeWork("saved") {
            let tag: GroceryTag
            if let existing = try Self.tag(named: name, in: context) {
                tag = existing
            } else {
                tag = GroceryTag(context: context)
                tag.name = name
            }
            let item = try Self.record(of: entry, in: context)
            guard !item.tags.contains(tag) else { return Tagging(entry: entry, tag: tag.name, changed: false) }
            item.tags.insert(tag)
            try context.save()
            return Tagging(entry: entry, tag: tag.name, changed: true)
        }
    }

    /// Takes the tag `tagName` (in any case) from the item `reference` names; the tag stays, with its other items.
    /// - Throws: ``GroceryError/Code/noSuchTag`` when the item does not have the tag, and what ``tag(_:with:)``
    ///   throws.
    @discardableResult
    public func untag(_ reference: String, from tagName: String) async throws -> Tagging {
        let name = try Self.validTagName(tagName)
        let entry = try await find(reference)
        let context = try await tagStore().makeContext()
        return try Self.storeWork("saved") {
            guard let item = try Self.existingRecord(of: entry.id, in: context),
                let tag = Self.matching(name, in: Array(item.tags))
            else {
                throw GroceryError(
                    .noSuchTag, "\(entry.displayName) has no tag \"\(name)\"; `grocery tags` shows the tags")
            }
            item.tags.remove(tag)
            try context.save()
            return Tagging(entry: entry, tag: tag.name, changed: true)
        }
    }

    /// Every tag, by name (in any case), each with its colour and the items that have it. A tag whose items are all
    /// gone is listed with none: tags are never deleted by the app (see docs/Grocery.md).
    public func tags() async throws -> [TagSummary] {
        let entries = try await items()
        let context = try await tagStore().makeContext()
        let tags = try Self.storeWork("read") {
            try context.fetch(FetchRequest<GroceryTag>()).map { ($0.name, $0.color, Set($0.items.map(\.documentID))) }
        }
        return tags.map { name, color, ids in
            TagSummary(name: name, color: color, items: entries.filter { ids.contains($0.id) })
        }
        .sorted { a, b in
            let order = a.name.localizedStandardCompare(b.name)
            return order == .orderedSame ? a.name < b.name : order == .orderedAscending
        }
    }

    /// The items with the tag `tagName` (in any case), in the list's order.
    /// - Throws: ``GroceryError/Code/noSuchTag`` when no tag has the name.
    public func items(taggedWith tagName: String) async throws -> [GroceryEntry] {
        let name = try Self.validTagName(tagName)
        let entries = try await items()
        let context = try await tagStore().makeContext()
        let ids = try Self.storeWork("read") {
            guard let tag = try Self.tag(named: name, in: context) else {
                throw GroceryError(.noSuchTag, "no tag is named \"\(name)\"; `grocery tags` shows the tags")
            }
            return Set(tag.items.map(\.documentID))
        }
        return entries.filter { ids.contains($0.id) }
    }

    /// Deletes the item's record from the tag store, and so its links; its tags stay. Called when the item is
    /// deleted: its document is gone already, so a failure here is logged, not thrown — a record whose document is
    /// gone is never shown.
    func forgetTags(of entry: GroceryEntry) async {
        do {
            guard try await hasTagStore() else { return }
            let context = try await tagStore().makeContext()
            try Self.storeWork("saved") {
                guard let item = try Self.existingRecord(of: entry.id, in: context) else { return }
                context.delete(item)
                try context.save()
            }
        } catch {
            logger.error("\(entry.displayName) is deleted, but its tags could not be taken from it: \(error)")
        }
    }

    // MARK: The store

    /// Opens the tag store now, as the book adds its store at launch, rather than when tags are first asked for. The
    /// store's first import after it is added (a sync, then what the container holds) then runs while nothing waits
    /// for tags.
    public func openTagStore() async throws {
        _ = try await tagStore()
    }

    /// The tag store, opened on first use: a file of the signed-in account's under `<root>/.grocery/`
    /// (`CoreDataUbiquitySupport/<account>/Grocery.sqlite`), its logs in the container's `grocery_data` folder.
    func tagStore() async throws -> GroceryTagStore {
        if let tagStoreOpening { return try await tagStoreOpening.value }
        let file = supportFolder.appendingPathComponent(GroceryTagStore.fileName)
        let ubiquity = ubiquity
        // One opening, which every caller that asks meanwhile awaits, so that the store is added once.
        let opening = Task {
            guard let container = try await ubiquity.containerURL(forIdentifier: nil) else {
                throw UbiquityError(.notSignedIn, "the device is not signed in; sign in with `ubiquity login`")
            }
            return try await GroceryTagStore.open(file: file, container: container)
        }
        tagStoreOpening = opening
        do {
            return try await opening.value
        } catch {
            if tagStoreOpening == opening { tagStoreOpening = nil }
            throw error
        }
    }

    /// Whether this device has tags to care about: its tag store is open, or a device's logs of it are in the
    /// container.
    private func hasTagStore() async throws -> Bool {
        if tagStoreOpening != nil { return true }
        guard let container = try await ubiquity.containerURL(forIdentifier: nil) else { return false }
        return FileManager.default.fileExists(atPath: GroceryTagStore.contentFolder(in: container).path)
    }

    /// Imports the other devices' tags a sync brought, when the tag store is open (opening it imports them) and
    /// imports are not held (see ``holdingTagImports(_:)``).
    func importTags() async throws {
        // While imports are held, the logs a sync brought wait: the import the store schedules when they appear
        // runs once the hold ends.
        guard tagImportHolds == 0 else { return }
        guard let tagStoreOpening, let store = try? await tagStoreOpening.value else { return }
        try await store.importChanges()
    }

    /// Closes the tag store. Each save wrote its log as it returned; letting go of the coordinator closes its
    /// database and stops its watch of the container's folder.
    func closeTagStore() async {
        guard let opening = tagStoreOpening else { return }
        tagStoreOpening = nil
        _ = try? await opening.value
    }

    // MARK: Finding records

    /// The tag named `name`: that exact name, else the first (by name) of the tags named so in another case.
    static func tag(named name: String, in context: ManagedObjectContext) throws -> GroceryTag? {
        let exact = FetchRequest<GroceryTag>(predicate: #Predicate { $0.name == name })
        if let tag = try context.fetch(exact).first { return tag }
        return matching(name, in: try context.fetch(FetchRequest<GroceryTag>()))
    }

    /// Of `tags`, the one named `name`, in this case or, failing that, in another.
    private static func matching(_ name: String, in tags: [GroceryTag]) -> GroceryTag? {
        if let exact = tags.first(where: { $0.name == name }) { return exact }
        return tags.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.min { $0.name < $1.name }
    }

    /// The record of the document with id `documentID`, if the store has one.
    private static func existingRecord(of documentID: String, in context: ManagedObjectContext) throws -> GroceryItem? {
        try context.fetch(FetchRequest<GroceryItem>(predicate: #Predicate { $0.documentID == documentID })).first
    }

    /// The record of `entry`'s document, made if the store has none. Every device gives it the same id, from the
    /// document's.
    private static func record(of entry: GroceryEntry, in context: ManagedObjectContext) throws -> GroceryItem {
        if let item = try existingRecord(of: entry.id, in: context) { return item }
        let item = GroceryItem(context: context)
        item.documentID = entry.id
        return item
    }

    /// Runs `body`; an error of the store becomes ``GroceryError/Code/storeFailed`` ("the tags could not be
    /// `verb`").
    static func storeWork<T>(_ verb: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as GroceryError {
            throw error
        } catch {
            throw GroceryError(.storeFailed, "the tags could not be \(verb): \(error)")
        }
    }

    /// The tag name `name` stands for: trimmed, in Unicode's composed form (so that every device keys it alike).
    /// - Throws: ``GroceryError/Code/invalidValue`` for an empty name, one longer than ``maximumTagNameLength``
    ///   characters, or one holding control characters (a tab, a line break).
    static func validTagName(_ name: String) throws -> String {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCanonicalMapping
        guard !trimmed.isEmpty else {
            throw GroceryError(.invalidValue, "a tag's name cannot be empty")
        }
        guard trimmed.count <= maximumTagNameLength else {
            throw GroceryError(
                .invalidValue,
                "a tag's name is at most \(maximumTagNameLength) characters; this one has \(trimmed.count)")
        }
        guard !hasControlCharacters(trimmed) else {
            throw GroceryError(
                .invalidValue, "a tag's name cannot hold control characters (such as a tab or a line break)")
        }
        return trimmed
    }

    /// Whether `text` holds a control character, a line separator or a paragraph separator.
    static func hasControlCharacters(_ text: String) -> Bool {
        let unprintable: [Unicode.GeneralCategory] = [.control, .lineSeparator, .paragraphSeparator]
        return text.unicodeScalars.contains { unprintable.contains($0.properties.generalCategory) }
    }
}
