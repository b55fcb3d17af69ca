import Foundation
import RecordStore

/// The book's chapter-8 model with a list beside it: items and tags many-to-many (tags unique by name), and lists
/// that hold items one-to-many.
enum TestModel {
    static let item = EntityDescription(
        name: "Item", managedObjectClass: Item.self,
        attributes: [
            AttributeDescription(name: "title", type: .string, defaultValue: .string("")),
            AttributeDescription(name: "quantity", type: .integer16, defaultValue: .integer(1)),
            AttributeDescription(name: "note", type: .string, isOptional: true),
        ],
        relationships: [
            RelationshipDescription(name: "tags", destinationEntityName: "Tag", inverseName: "items", isToMany: true),
            RelationshipDescription(name: "list", destinationEntityName: "List", inverseName: "items"),
        ])
    static let tag = EntityDescription(
        name: "Tag", managedObjectClass: Tag.self,
        attributes: [AttributeDescription(name: "name", type: .string)],
        relationships: [
            RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: "tags", isToMany: true)
        ],
        uniquenessKey: ["name"])
    static let list = EntityDescription(
        name: "List", managedObjectClass: GroceryList.self,
        attributes: [AttributeDescription(name: "name", type: .string)],
        relationships: [
            RelationshipDescription(
                name: "items", destinationEntityName: "Item", inverseName: "list", isToMany: true,
                deleteRule: .cascade)
        ])
    static let model = ManagedObjectModel(version: 1, entities: [item, tag, list])
}

final class Item: ManagedObject {
    @Attribute("title") var title: String
    @Attribute("quantity") var quantity: Int16
    @Attribute("note") var note: String?
    @ToMany("tags") var tags: Set<Tag>
    @ToOne("list") var list: GroceryList?
}

final class Tag: ManagedObject {
    @Attribute("name") var name: String
    @ToMany("items") var items: Set<Item>
}

final class GroceryList: ManagedObject {
    @Attribute("name") var name: String
    @ToMany("items") var items: Set<Item>
}
