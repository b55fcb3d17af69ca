import Foundation
import RecordStore

/// The book's relational model of chapter 8 as the Grocery sample keeps it: items and tags, many-to-many.
///
/// An item's name, image and history stay in its document (`Item_<uuid>.gro`); the store holds only what one
/// item's package cannot: which items have which tags. So a ``GroceryItem`` is no more than the id of its document,
/// and both entities have a uniqueness key — the same item or the same tag name reached from two devices is one
/// object, and the links made to it on each device merge as a set.
///
/// ```swift
/// let coordinator = PersistentStoreCoordinator(managedObjectModel: GroceryTagModel.model)
/// ```
public enum GroceryTagModel {
    /// `GroceryItem`: one item document, by the id in its file name; its tags.
    public static let item = EntityDescription(
        name: "GroceryItem", managedObjectClass: GroceryItem.self,
        attributes: [AttributeDescription(name: "documentID", type: .string)],
        relationships: [
            RelationshipDescription(name: "tags", destinationEntityName: "Tag", inverseName: "items", isToMany: true)
        ],
        uniquenessKey: ["documentID"])

    /// `Tag`: a name, unique; a colour, if it has one (since version 2); the items that have it.
    public static let tag = EntityDescription(
        name: "Tag", managedObjectClass: GroceryTag.self,
        attributes: [
            AttributeDescription(name: "name", type: .string),
            AttributeDescription(name: "color", type: .string, isOptional: true),
        ],
        relationships: [
            RelationshipDescription(
                name: "items", destinationEntityName: "GroceryItem", inverseName: "tags", isToMany: true)
        ],
        uniquenessKey: ["name"])

    /// The model, version 2. Version 1 had no tag colours; a store of version 1 gains the column when it is opened
    /// (an added optional attribute is a lightweight migration), its tags without a colour. A device still on
    /// version 1 keeps the logs of version 2 it receives, unapplied, until it is upgraded.
    public static let model = ManagedObjectModel(version: 2, entities: [item, tag])
}

/// One item of the list in the tag store: the id of its document (see ``GroceryEntry/id``) and its tags.
///
/// Deleting it removes its links (the delete rule is nullify); its tags stay.
public final class GroceryItem: ManagedObject {
    /// The id in the item document's file name, `Item_<documentID>.gro`.
    @Attribute("documentID") public var documentID: String
    /// The item's tags.
    @ToMany("tags") public var tags: Set<GroceryTag>
}

/// A tag, such as "Dairy" or "Weekly"; two devices that each make a tag of one name make the same tag.
public final class GroceryTag: ManagedObject {
    /// The tag's name, as it was first written.
    @Attribute("name") public var name: String
    /// The tag's colour, such as "blue", or `nil` for none. Set on two devices at once, the later save's colour is
    /// kept on both.
    @Attribute("color") public var color: String?
    /// The items that have the tag.
    @ToMany("items") public var items: Set<GroceryItem>
}
