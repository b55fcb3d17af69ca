import Foundation

/// One kind of object in a model: its attributes, its relationships, and an optional uniqueness key.
///
/// ```swift
/// let tag = EntityDescription(
///     name: "Tag",
///     attributes: [AttributeDescription(name: "name", type: .string)],
///     relationships: [RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: "tags",
///                                             isToMany: true)],
///     uniquenessKey: ["name"])
/// ```
public final class EntityDescription: Sendable, CustomStringConvertible {
    /// The entity's name, unique in its model.
    public let name: String
    /// Its attributes, in the order given.
    public let attributes: [AttributeDescription]
    /// Its relationships, in the order given.
    public let relationships: [RelationshipDescription]
    /// The attributes whose values together name one object: two objects with the same values are the same object,
    /// on one device or across devices. Empty for none.
    public let uniquenessKey: [String]
    /// The ``ManagedObject`` subclass that objects of the entity are made as.
    public let managedObjectClass: ManagedObject.Type

    /// Attributes by name.
    public let attributesByName: [String: AttributeDescription]
    /// The attributes in the order of their names, the order a change holds its values in.
    let attributesInNameOrder: [AttributeDescription]
    /// Relationships by name.
    public let relationshipsByName: [String: RelationshipDescription]

    /// Creates an entity.
    /// - Parameters:
    ///   - name: The name, unique in its model.
    ///   - managedObjectClass: The class its objects are made as; ``ManagedObject`` itself by default.
    ///   - attributes: Its attributes.
    ///   - relationships: Its relationships.
    ///   - uniquenessKey: Attribute names whose values together name one object; none by default.
    public init(
        name: String, managedObjectClass: ManagedObject.Type = ManagedObject.self,
        attributes: [AttributeDescription] = [], relationships: [RelationshipDescription] = [],
        uniquenessKey: [String] = []
    ) {
        self.name = name
        self.managedObjectClass = managedObjectClass
        self.attributes = attributes
        self.relationships = relationships
        self.uniquenessKey = uniquenessKey
        self.attributesByName = Dictionary(attributes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.attributesInNameOrder = attributesByName.values.sorted { $0.name < $1.name }
        self.relationshipsByName = Dictionary(
            relationships.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The names of its attributes and relationships.
    public var propertyNames: [String] { attributes.map(\.name) + relationships.map(\.name) }

    public var description: String { "EntityDescription(\(name))" }
}
