import Foundation

/// The objects and links a merge changed, as an app sees them.
package struct MergeChanges: Sendable, Hashable {
    package var inserted: Set<ManagedObjectID> = []
    package var updated: Set<ManagedObjectID> = []
    package var deleted: Set<ManagedObjectID> = []

    package init() {}

    package var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }

    /// How many objects the changes name.
    package var count: Int { inserted.count + updated.count + deleted.count }

    /// Adds what a later change did: an object inserted and then deleted was never seen, and one inserted or deleted
    /// is not also updated.
    package mutating func append(_ later: MergeChanges) {
        inserted.formUnion(later.inserted)
        updated.formUnion(later.updated)
        deleted.formUnion(later.deleted)
        let gone = inserted.intersection(later.deleted)
        inserted.subtract(gone)
        deleted.subtract(gone)
        deleted.subtract(later.inserted)
        updated.subtract(inserted)
        updated.subtract(deleted)
        updated.subtract(gone)
    }
}

/// Where a merge reads and writes records and links: memory (``ReplicaState``) or a store's database.
///
/// The merge itself is written once, here, for both. Applying logs is a join of registers: in any order and any
/// number of times, the same logs leave the same records and links.
/// Whether an object existed before a merge and after it.
package struct Liveness: Sendable, Hashable {
    package var before: Bool
    package var now: Bool
}

package protocol MergeTarget {
    func record(_ id: ManagedObjectID) throws -> ObjectRecord?
    mutating func setRecord(_ record: ObjectRecord, for id: ManagedObjectID) throws
    /// Writes the record of `change` (an insert) made at `stamp` if the target holds nothing for its id.
    /// - Returns: Whether it was written; `false` leaves what the target holds untouched.
    mutating func insertNew(_ change: ObjectChange, stamp: Stamp) throws -> Bool
    func link(_ key: LinkKey) throws -> Register<Bool>?
    mutating func setLink(_ link: Register<Bool>, for key: LinkKey) throws
}

extension MergeTarget {
    /// Applies a log after checking all of it against `model`.
    ///
    /// - Parameter checked: Whether the changes are known to fit the model already (a save of this device, made of
    ///   values its context checked as they were set), which skips checking each again.
    /// - Returns: The objects inserted, updated and deleted as an app sees them.
    /// - Throws: ``RecordStoreError/Code/newerModel`` for a log of a newer model (apply it after the upgrade), or
    ///   ``RecordStoreError/Code/corruptLog``; either way nothing is applied. Errors of the target are passed on.
    @discardableResult
    package mutating func apply(_ log: TransactionLog, model: ManagedObjectModel, checked: Bool = false) throws
        -> MergeChanges
    {
        guard log.modelVersion <= model.version else {
            throw RecordStoreError(
                .newerModel,
                "log \(log.sequence) of \(log.device) was written by model \(log.modelVersion), "
                    + "newer than this app's \(model.version)")
        }
        if !checked {
            for change in log.changes { try model.check(change) }
        }
        let stamp = log.stamp
        var liveness: [ManagedObjectID: Liveness] = [:]
        liveness.reserveCapacity(log.changes.count)
        var updated: Set<ManagedObjectID> = []
        updated.reserveCapacity(log.changes.count)
        for change in log.changes {
            if change.existence == true, liveness[change.id] == nil, try insertNew(change, stamp: stamp) {
                // An insert of an id the target has never held (every new object of a save), written without reading
                // first: its record is the change, and a to-one of it points at its target from nothing. It counts as
                // inserted, never as updated.
                liveness[change.id] = Liveness(before: false, now: true)
                for case (_, .object(let target)) in change.values { updated.insert(target) }
            } else {
                // An id the target holds is merged with what is there.
                let before = try self.record(change.id) ?? ObjectRecord()
                var record = before
                if record.merge(change, stamp: stamp) { updated.insert(change.id) }
                if record != before { try setRecord(record, for: change.id) }
                liveness[change.id, default: Liveness(before: before.isLive, now: false)].now = record.isLive
                // A to-one that moved changes what its old and new targets read on their side.
                for (property, value) in change.values {
                    // Only a to-one holds objects: a change to another value is an attribute's, and a change to
                    // nothing matters only where an object was.
                    switch value {
                    case .object: break
                    case .null: guard case .object = before.value(property) else { continue }
                    default: continue
                    }
                    let (old, new) = (before.value(property), record.value(property))
                    guard old != new else { continue }
                    if case .object(let old) = old { updated.insert(old) }
                    if case .object(let new) = new { updated.insert(new) }
                }
            }
            for (link, present) in change.linksAdded.map({ ($0, true) }) + change.linksRemoved.map({ ($0, false) }) {
                let key = LinkKey(source: change.id, relationship: link.relationship, target: link.target)
                var register = try self.link(key)
                let before = register
                register.merge(Register(present, stamp: stamp))
                if register != before, let register { try setLink(register, for: key) }
                // A link that never was and is now removed changes nothing an app sees.
                if (before?.value ?? false) != (register?.value ?? false) {
                    updated.insert(change.id)
                    updated.insert(link.target)
                }
            }
        }
        return try changes(liveness: liveness, updated: updated)
    }

    /// What a merge changed as an app sees it: objects that came to exist or ceased to, of those whose liveness
    /// before and after the merge `liveness` holds; and of `updated`, the others that exist (read from the target
    /// only when the merge did not write them).
    package func changes(liveness: [ManagedObjectID: Liveness], updated: Set<ManagedObjectID>) throws
        -> MergeChanges
    {
        var changes = MergeChanges()
        changes.inserted.reserveCapacity(liveness.count)
        for (id, liveness) in liveness {
            if liveness.now && !liveness.before { changes.inserted.insert(id) }
            if liveness.before && !liveness.now { changes.deleted.insert(id) }
        }
        for id in updated {
            // Neither inserted nor deleted by the merge, and live after it.
            if let liveness = liveness[id] {
                if liveness.before && liveness.now { changes.updated.insert(id) }
            } else if try record(id)?.isLive ?? false {
                changes.updated.insert(id)
            }
        }
        return changes
    }
}
