import Foundation

/// What deleting an object does to the objects its relationship points at.
public enum DeleteRule: String, Sendable, Hashable {
    /// The related objects stay; their inverse no longer points at the deleted object.
    case nullify
    /// The related objects are deleted too.
    case cascade
    /// The delete is refused while the relationship points at any object.
    case deny
    /// Nothing is done to the related objects.
    case noAction
}

/// One relationship of an entity: to one object or to many, of a destination entity, with an inverse.
///
/// ```swift
/// RelationshipDescription(name: "tags", destinationEntityName: "Tag", inverseName: "items", isToMany: true)
/// ```
public struct RelationshipDescription: Sendable, Hashable {
    /// The relationship's name, unique in its entity.
    public var name: String
    /// The entity of the objects it points at.
    public var destinationEntityName: String
    /// The relationship of the destination entity that points back, if any.
    public var inverseName: String?
    /// Whether it holds a set of objects rather than at most one.
    public var isToMany: Bool
    /// What deleting the source object does to the objects it points at.
    public var deleteRule: DeleteRule
    /// Whether a to-one may point at nothing. To-many relationships may always be empty.
    public var isOptional: Bool

    /// Creates a relationship.
    /// - Parameters:
    ///   - name: The name, unique in its entity.
    ///   - destinationEntityName: The entity of the objects it points at.
    ///   - inverseName: The destination's relationship that points back.
    ///   - isToMany: Whether it holds a set of objects.
    ///   - deleteRule: What deleting the source does to the destinations; nullify by default.
    ///   - isOptional: Whether a to-one may point at nothing; `true` by default.
    public init(
        name: String, destinationEntityName: String, inverseName: String? = nil, isToMany: Bool = false,
        deleteRule: DeleteRule = .nullify, isOptional: Bool = true
    ) {
        self.name = name
        self.destinationEntityName = destinationEntityName
        self.inverseName = inverseName
        self.isToMany = isToMany
        self.deleteRule = deleteRule
        self.isOptional = isOptional
    }
}
