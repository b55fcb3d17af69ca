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
    /// Each attribute's place in ``attributes``, by name (the first of a name given twice).
    private let attributePlaces: [String: Int]
    /// For each of ``attributesInNameOrder``, its place in ``attributes``.
    let attributePlacesInNameOrder: [Int]
    /// Each attribute's default value, in the order of ``attributes``.
    let defaultValues: [RecordValue]
    /// The attributes a new object must be given a value for: required, without a default.
    let attributesWithoutDefault: [AttributeDescription]
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
        let places = Dictionary(attributes.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.attributePlaces = places
        self.attributePlacesInNameOrder = places.values.sorted { attributes[$0].name < attributes[$1].name }
        self.attributesInNameOrder = attributePlacesInNameOrder.map { attributes[$0] }
        self.defaultValues = attributes.map(\.defaultValue)
        self.attributesWithoutDefault = attributes.filter { !$0.isOptional && $0.defaultValue.isNull }
        self.relationshipsByName = Dictionary(
            relationships.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The attribute named `name`. An entity has a handful: comparing the names in turn answers sooner than hashing
    /// the one asked for (two equal names usually compare as equal bits at once); a large entity is looked up by hash.
    func attribute(named name: String) -> AttributeDescription? {
        attributeIndex(named: name).map { attributes[$0] }
    }

    /// Where the attribute named `name` is in ``attributes``, found as ``attribute(named:)`` finds it: for a read of
    /// its description in place, without copying it out.
    func attributeIndex(named name: String) -> Int? {
        guard attributes.count <= Self.namesComparedInTurn else {
            return attributePlaces[name]
        }
        return attributes.firstIndex { $0.name == name }
    }

    /// Up to how many attributes ``attribute(named:)`` compares names in turn.
    static let namesComparedInTurn = 16

    /// The names of its attributes and relationships.
    public var propertyNames: [String] { attributes.map(\.name) + relationships.map(\.name) }

    public var description: String { "EntityDescription(\(name))" }
}
