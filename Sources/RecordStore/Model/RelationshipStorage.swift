import Foundation

/// Where the store keeps a relationship, so that the two sides of a pair are one fact, not two that can disagree.
///
/// - A to-one whose inverse is to-many (or that has none) is a register on its own object: an item's `list`.
/// - A to-many without an inverse is a set of links from its own object.
/// - Of a pair of to-manys, or a pair of to-ones, the side whose `Entity.name` sorts first holds the links or the
///   register; the other side is read from it.
/// - A to-many whose inverse is to-one is read from that to-one: a list's `items` are the items whose `list` it is.
enum RelationshipStorage: Sendable, Hashable {
    /// A register on the source object holding the target's id.
    case register
    /// A set of links from the source object.
    case links
    /// Read from the inverse relationship, stored on the destination entity.
    case inverse(of: String, relationship: String)
}

extension ManagedObjectModel {
    /// Where the relationship `name` of `entity` is stored.
    func storage(ofRelationship name: String, in entity: String) -> RelationshipStorage? {
        storage[entity]?[name]
    }

    static func storage(
        of relationship: RelationshipDescription, in entity: EntityDescription,
        entities: [String: EntityDescription]
    ) -> Result<RelationshipStorage, RecordStoreError> {
        let qualified = "\(entity.name).\(relationship.name)"
        guard let destination = entities[relationship.destinationEntityName] else {
            return .failure(
                RecordStoreError(
                    .invalidModel,
                    "\(qualified) points at \(relationship.destinationEntityName), "
                        + "which is not in the model"))
        }
        guard let inverseName = relationship.inverseName else {
            return .success(relationship.isToMany ? .links : .register)
        }
        guard let inverse = destination.relationshipsByName[inverseName],
            inverse.destinationEntityName == entity.name, inverse.inverseName == relationship.name
        else {
            return .failure(
                RecordStoreError(
                    .invalidModel,
                    "the inverse of \(qualified), \(destination.name).\(inverseName), "
                        + "does not point back at it"))
        }
        let thisSideFirst = (entity.name, relationship.name) <= (destination.name, inverse.name)
        switch (relationship.isToMany, inverse.isToMany) {
        case (false, true): return .success(.register)
        case (true, false): return .success(.inverse(of: destination.name, relationship: inverse.name))
        case (true, true):
            return .success(thisSideFirst ? .links : .inverse(of: destination.name, relationship: inverse.name))
        case (false, false):
            return .success(thisSideFirst ? .register : .inverse(of: destination.name, relationship: inverse.name))
        }
    }
}
