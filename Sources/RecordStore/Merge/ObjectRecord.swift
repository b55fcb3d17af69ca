import Foundation

/// What a device knows of one object: whether it exists, and each property's latest value, each with its stamp.
///
/// An object exists when its latest insert is later than its latest delete. A delete wins over every edit made
/// before it or concurrently with it, since edits do not touch existence; an insert later than the delete (the same
/// uniqueness key created again) brings the object back.
package struct ObjectRecord: Sendable, Hashable {
    /// Inserted (`true`) or deleted (`false`), as the latest of those changes left it; `nil` if neither came yet.
    package var existence: Register<Bool>?
    /// Attributes and to-one registers.
    package var values: PropertyMap<Register<RecordValue>>

    package init(existence: Register<Bool>? = nil, values: PropertyMap<Register<RecordValue>> = [:]) {
        self.existence = existence
        self.values = values
    }

    /// Whether the object exists: inserted, and not deleted since.
    package var isLive: Bool { existence?.value == true }

    /// The value of `property`, ``RecordValue/null`` if never set.
    package func value(_ property: String) -> RecordValue { values[property]?.value ?? .null }

    /// Merges one change made at `stamp`.
    /// - Returns: Whether any value changed (existence apart).
    package mutating func merge(_ change: ObjectChange, stamp: Stamp) -> Bool {
        if let existence = change.existence { self.existence.merge(Register(existence, stamp: stamp)) }
        var changed = false
        if values.isEmpty { values.reserveCapacity(change.values.count) }
        for (property, value) in change.values {
            if values[property].merge(Register(value, stamp: stamp)) { changed = true }
        }
        return changed
    }
}

/// One link of a stored to-many relationship.
package struct LinkKey: Sendable, Hashable, Comparable {
    package var source: ManagedObjectID
    package var relationship: String
    package var target: ManagedObjectID

    package init(source: ManagedObjectID, relationship: String, target: ManagedObjectID) {
        self.source = source
        self.relationship = relationship
        self.target = target
    }

    package static func < (lhs: LinkKey, rhs: LinkKey) -> Bool {
        (lhs.source, lhs.relationship, lhs.target) < (rhs.source, rhs.relationship, rhs.target)
    }
}
