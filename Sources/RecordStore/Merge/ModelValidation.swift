import Foundation

extension ManagedObjectModel {
    /// Checks that a change names only what this model has, with values of the right types.
    ///
    /// An import checks a whole log before applying any of it.
    /// - Throws: ``RecordStoreError/Code/corruptLog`` naming the first thing wrong.
    package func check(_ change: ObjectChange) throws(RecordStoreError) {
        let id = change.id
        guard let entity = entitiesByName[id.entityName] else {
            throw RecordStoreError(.corruptLog, "a change to an object of \(id.entityName), which is not in the model")
        }
        for (property, value) in change.values {
            if let attribute = entity.attributesByName[property] {
                guard attribute.type.accepts(value) || (value.isNull && attribute.isOptional) else {
                    throw RecordStoreError(
                        .corruptLog, "\(entity.name).\(property) set to \(value), not a \(attribute.type) value",
                        objectID: id, property: property)
                }
            } else if let relationship = entity.relationshipsByName[property],
                storage(ofRelationship: property, in: entity.name) == .register
            {
                switch value {
                case .null: break
                case .object(let target) where target.entityName == relationship.destinationEntityName: break
                default:
                    throw RecordStoreError(
                        .corruptLog,
                        "\(entity.name).\(property) set to \(value), not a \(relationship.destinationEntityName)",
                        objectID: id, property: property)
                }
            } else {
                throw RecordStoreError(
                    .corruptLog, "a change to \(entity.name).\(property), which the entity does not store",
                    objectID: id, property: property)
            }
        }
        if !Set(change.linksAdded).isDisjoint(with: change.linksRemoved) {
            throw RecordStoreError(.corruptLog, "a change both adds and removes a link of \(id)", objectID: id)
        }
        for link in change.linksAdded + change.linksRemoved {
            guard let relationship = entity.relationshipsByName[link.relationship],
                storage(ofRelationship: link.relationship, in: entity.name) == .links,
                link.target.entityName == relationship.destinationEntityName
            else {
                throw RecordStoreError(
                    .corruptLog,
                    "a link of \(entity.name).\(link.relationship) to \(link.target), which the model "
                        + "does not store", objectID: id, property: link.relationship)
            }
        }
    }
}
