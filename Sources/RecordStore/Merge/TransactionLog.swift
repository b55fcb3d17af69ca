import Foundation

/// One save of one device: every object it inserted, changed or deleted, under one stamp.
///
/// A device writes one log per save into its own folder of the container and never changes it; other devices
/// import it. Logs are merged property by property, so the same set of logs gives the same store in any order.
package struct TransactionLog: Sendable, Hashable {
    /// The device that saved, and the order of its saves (1, 2, 3 …).
    package var device: UUID
    package var sequence: UInt64
    /// The hybrid-logical-clock time of the save; every change in the log carries it.
    package var time: UInt64
    /// The version of the model that wrote the log.
    package var modelVersion: Int
    /// The objects the save touched, in the order of their ids.
    package var changes: [ObjectChange]

    package init(device: UUID, sequence: UInt64, time: UInt64, modelVersion: Int, changes: [ObjectChange]) {
        self.device = device
        self.sequence = sequence
        self.time = time
        self.modelVersion = modelVersion
        self.changes = changes
    }

    /// The stamp every change of the log carries.
    package var stamp: Stamp { Stamp(time: time, device: device) }
}

/// What one save did to one object.
package struct ObjectChange: Sendable, Hashable {
    /// The object.
    package var id: ManagedObjectID
    /// `true` for an insert, `false` for a delete, `nil` for an update of an object that exists.
    package var existence: Bool?
    /// The attributes and to-one registers set, by property name (a to-one as ``RecordValue/object(_:)``).
    package var values: PropertyMap<RecordValue>
    /// Links added from this object, by relationship name (only relationships the object's side stores).
    package var linksAdded: [Link]
    /// Links removed from this object.
    package var linksRemoved: [Link]

    package init(
        id: ManagedObjectID, existence: Bool? = nil, values: PropertyMap<RecordValue> = [:], linksAdded: [Link] = [],
        linksRemoved: [Link] = []
    ) {
        self.id = id
        self.existence = existence
        self.values = values
        self.linksAdded = linksAdded
        self.linksRemoved = linksRemoved
    }

    /// One link of a to-many relationship: its name and the object it points at.
    package struct Link: Sendable, Hashable, Comparable {
        package var relationship: String
        package var target: ManagedObjectID

        package init(_ relationship: String, _ target: ManagedObjectID) {
            self.relationship = relationship
            self.target = target
        }

        package static func < (lhs: Link, rhs: Link) -> Bool {
            (lhs.relationship, lhs.target) < (rhs.relationship, rhs.target)
        }
    }
}
