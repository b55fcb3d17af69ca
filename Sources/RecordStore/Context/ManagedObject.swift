import Foundation

/// An object of a record store: an entity's instance, living in one context.
///
/// Subclass it to give an entity typed properties, and name the subclass in the entity's description.
open class ManagedObject {
    /// The object's entity.
    public let entity: EntityDescription
    /// The object's identity, the same on every device.
    public internal(set) var objectID: ManagedObjectID

    /// Makes an object of `entity` with the id `objectID`; contexts make objects, apps insert them.
    public required init(entity: EntityDescription, objectID: ManagedObjectID) {
        self.entity = entity
        self.objectID = objectID
    }
}
