import Foundation
import UbiquityKit

/// What one save or import changed, by object id: the payload of ``ManagedObjectContext/didSaveChanges()`` and
/// ``PersistentStoreCoordinator/importedChanges()``.
public struct ObjectIDChanges: Sendable, Hashable {
    /// Objects that came to exist.
    public var inserted: Set<ManagedObjectID>
    /// Objects whose properties changed.
    public var updated: Set<ManagedObjectID>
    /// Objects that ceased to exist.
    public var deleted: Set<ManagedObjectID>

    /// Creates a change set.
    public init(
        inserted: Set<ManagedObjectID> = [], updated: Set<ManagedObjectID> = [], deleted: Set<ManagedObjectID> = []
    ) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }

    init(_ changes: MergeChanges) {
        self.init(inserted: changes.inserted, updated: changes.updated, deleted: changes.deleted)
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }

    /// The notification `userInfo` Core Data uses: ids under ``NSInsertedObjectsKey`` and the others.
    var userInfo: [AnyHashable: Any] {
        [NSInsertedObjectsKey: inserted, NSUpdatedObjectsKey: updated, NSDeletedObjectsKey: deleted]
    }

    /// Reads ids (or objects) from a notification's `userInfo` under Core Data's keys.
    init(userInfo: [AnyHashable: Any]?) {
        func ids(_ key: String) -> Set<ManagedObjectID> {
            switch userInfo?[key] {
            case let ids as Set<ManagedObjectID>: ids
            case let ids as [ManagedObjectID]: Set(ids)
            case let objects as Set<ManagedObject>: Set(objects.map(\.objectID))
            case let objects as [ManagedObject]: Set(objects.map(\.objectID))
            default: []
            }
        }
        self.init(
            inserted: ids(NSInsertedObjectsKey), updated: ids(NSUpdatedObjectsKey), deleted: ids(NSDeletedObjectsKey))
    }
}

/// The `userInfo` key of the inserted objects' ids in a did-save or did-import notification.
public let NSInsertedObjectsKey = "inserted"
/// The `userInfo` key of the updated objects' ids in a did-save or did-import notification.
public let NSUpdatedObjectsKey = "updated"
/// The `userInfo` key of the deleted objects' ids in a did-save or did-import notification.
public let NSDeletedObjectsKey = "deleted"

extension ManagedObjectContext {
    /// Posted after a save, with the context as object and the ids saved under ``NSInsertedObjectsKey``,
    /// ``NSUpdatedObjectsKey`` and ``NSDeletedObjectsKey``; pass it to another context's
    /// ``mergeChanges(fromContextDidSave:)``.
    public static let didSaveObjectsNotification = Notification.Name("NSManagedObjectContextDidSaveNotification")

    /// Every save of this context from now on, for as long as the stream is iterated.
    public func didSaveChanges() -> AsyncStream<ObjectIDChanges> { saves.stream() }

    /// Saves every change since the last save to the store, as one transaction and (for a store with ubiquitous
    /// options) one transaction log.
    ///
    /// Before anything is written, the changes are checked: a property refused by ``ManagedObject/setValue(_:forKey:)``,
    /// a required property left empty, a delete refused by a deny rule throws, naming the object and property.
    /// Properties the store changed since this context read them are settled by ``mergePolicy``, inside the
    /// save's transaction.
    /// - Throws: ``RecordStoreError``; nothing is saved and the context keeps its changes.
    public func save() throws(RecordStoreError) {
        let saved = try locked { () throws(RecordStoreError) -> ObjectIDChanges? in try saveLocked() }
        guard let saved else { return }
        saves.send(saved)
        NotificationCenter.default.post(name: Self.didSaveObjectsNotification, object: self, userInfo: saved.userInfo)
        notifyChangeObservers(saved)
    }

    private func saveLocked() throws(RecordStoreError) -> ObjectIDChanges? {
        // In the order of their ids, for a log every device reads alike; each id read once, not at each comparison.
        var keyed = pending.compactMap { $0.hasUnsavedChanges ? ($0.objectID, $0) : nil }
        keyed.sort { $0.0 < $1.0 }
        let objects = keyed.map(\.1)
        guard !objects.isEmpty else {
            pending.removeAll()
            return nil
        }
        let database = try database()
        try validate(objects)
        let finalIDs = try permanentIDs(for: objects)
        func id(_ object: ManagedObject) -> ManagedObjectID {
            finalIDs.isEmpty ? object.objectID : finalIDs[object] ?? object.objectID
        }
        let policy = mergePolicy
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        var stale: Set<ManagedObject> = []
        // A store without ubiquitous options writes no logs.
        let keepsLogs = store?.ubiquitousContentFolder != nil
        var kept: RecordDatabase.KeptLog?
        let result = try database.write { access -> (TransactionLog, MergeChanges)? in
            var overrides: [ManagedObjectID: ObjectChange] = [:]
            var dropped: [ManagedObject: Set<String>] = [:]
            stale = try settleConflicts(
                objects, access: access, policy: policy, dropped: &dropped, overrides: &overrides)
            // The changes in the order of their ids (the overrides first, rarely any), each id once.
            var changes = overrides.values.sorted { $0.id < $1.id }
            changes.reserveCapacity(objects.count)
            if changes.isEmpty, finalIDs.isEmpty {
                // Each object saved under its own id, already in order: no change to combine with another's.
                for object in objects {
                    changes.append(
                        self.change(of: object, id: id, dropping: dropped.isEmpty ? [] : dropped[object] ?? []))
                }
            } else {
                var position = Dictionary(uniqueKeysWithValues: changes.enumerated().map { ($1.id, $0) })
                position.reserveCapacity(objects.count)
                for object in objects {
                    let change = self.change(of: object, id: id, dropping: dropped.isEmpty ? [] : dropped[object] ?? [])
                    if let index = position[change.id] {
                        changes[index].combine(with: change)
                    } else {
                        position[change.id] = changes.count
                        changes.append(change)
                    }
                }
            }
            if policy.mergeType == .error {
                try checkUniqueness(objects, finalIDs: finalIDs, access: access)
            }
            let meaningful = changes.filter {
                $0.existence != nil || !$0.values.isEmpty || !$0.linksAdded.isEmpty || !$0.linksRemoved.isEmpty
            }
            let saved = try access.save(
                meaningful, physicalMilliseconds: now, keepingLog: keepsLogs,
                forgettingUpTo: database.durableSequence)
            kept = access.keptLog
            return saved
        }
        for object in objects {
            settle(object, stale: !stale.isEmpty && stale.contains(object), schema: database.schema, id: id)
        }
        pending.removeAll()
        store?.didSave(justSaved: kept)
        return result.map { ObjectIDChanges($0.1) } ?? ObjectIDChanges()
    }

    /// Throws the first thing wrong with an object about to be saved.
    private func validate(_ objects: [ManagedObject]) throws(RecordStoreError) {
        for object in objects {
            if let refused = object.refusedValues.first { throw refused.error }
            let entity = object.entity
            switch object.state {
            case .deleted:
                for relationship in entity.relationships where relationship.deleteRule == .deny {
                    let blocking = self.relationship(of: object, relationship.name).filter { $0.state != .deleted }
                    if let first = blocking.first {
                        throw RecordStoreError(
                            .deleteDenied,
                            "\(object.objectID) cannot be deleted while its \(relationship.name) holds \(first.objectID)",
                            objectID: object.objectID, property: relationship.name)
                    }
                }
            case .inserted, .fault:
                if object.state == .fault,
                    let key = entity.uniquenessKey.first(where: { object.changedValues[$0] != nil })
                {
                    throw RecordStoreError(
                        .validationFailed,
                        "\(entity.name).\(key) is part of the uniqueness key, which names the object on every device: "
                            + "delete \(object.objectID) and insert an object with the new key instead",
                        objectID: object.objectID, property: key)
                }
                if let attribute = firstEmptyRequiredAttribute(of: object) {
                    throw RecordStoreError(
                        .validationFailed, "\(entity.name).\(attribute.name) is required but has no value",
                        objectID: object.objectID, property: attribute.name)
                }
                for relationship in entity.relationships where !relationship.isToMany && !relationship.isOptional {
                    if self.relationship(of: object, relationship.name).isEmpty {
                        throw RecordStoreError(
                            .validationFailed, "\(entity.name).\(relationship.name) is required but points at nothing",
                            objectID: object.objectID, property: relationship.name)
                    }
                }
            case .gone: break
            }
        }
    }

    /// The first of the entity's required attributes that `object` holds no value for.
    private func firstEmptyRequiredAttribute(of object: ManagedObject) -> AttributeDescription? {
        let entity = object.entity
        // An inserted object holds a value for each attribute with a default unless it was set to none: with nothing
        // set to none and every attribute without a default set, there is nothing to look for.
        if object.state == .inserted, !object.changedValues.contains(where: { $0.value.isNull }),
            entity.attributesWithoutDefault.allSatisfy({ object.changedValues[$0.name] != nil })
        {
            return nil
        }
        return entity.attributes.first { !$0.isOptional && value(of: object, $0).isNull }
    }

    /// The ids inserted objects of entities with a uniqueness key take: derived from the key's values.
    private func permanentIDs(for objects: [ManagedObject]) throws(RecordStoreError) -> [ManagedObject: ManagedObjectID]
    {
        var ids: [ManagedObject: ManagedObjectID] = [:]
        for object in objects where object.state == .inserted && !object.entity.uniquenessKey.isEmpty {
            let values = object.entity.uniquenessKey.map { attributeValue(of: object, $0) }
            ids[object] = ManagedObjectID.derived(entityName: object.entity.name, keyValues: values)
        }
        return ids
    }

    /// Under the error policy, an inserted object whose uniqueness key another object has is refused.
    private func checkUniqueness(
        _ objects: [ManagedObject], finalIDs: [ManagedObject: ManagedObjectID], access: StoreAccess
    ) throws {
        var seen: [ManagedObjectID: ManagedObject] = [:]
        for (object, id) in finalIDs.sorted(by: { $0.value < $1.value }) {
            let key = object.entity.uniquenessKey.map { "\(attributeValue(of: object, $0))" }.joined(separator: ", ")
            let other = seen.updateValue(object, forKey: id)
            let registeredOther = registered[id].map { $0 !== object && $0.state != .deleted } ?? false
            let stored = try access.isLive(id) && registered[id]?.state != .deleted
            if other != nil || registeredOther || stored {
                throw RecordStoreError(
                    .uniquenessConflict,
                    "another \(object.entity.name) already has the key \(key); fetch it, or set a merge policy that "
                        + "merges the two", objectID: id, property: object.entity.uniquenessKey.first)
            }
        }
    }

    /// Finds the properties changed here that the store changed since this context read them, and lets the policy
    /// settle them.
    private func settleConflicts(
        _ objects: [ManagedObject], access: StoreAccess, policy: MergePolicy,
        dropped: inout [ManagedObject: Set<String>], overrides: inout [ManagedObjectID: ObjectChange]
    ) throws -> Set<ManagedObject> {
        var conflicts: [MergeConflict] = []
        var owners: [MergeConflict: ManagedObject] = [:]
        var stale: Set<ManagedObject> = []
        for object in objects where object.state == .fault {
            guard let stored = try access.snapshot(object.objectID) else {
                // Deleted in the store meanwhile: a delete wins over edits made before or concurrently with it
                // (docs/RecordStore.md), so the edit is saved but the object stays deleted; the context reads that.
                stale.insert(object)
                continue
            }
            guard let cached = object.snapshot else { continue }
            if cached != stored { stale.insert(object) }
            var keys = Array(object.changedValues.keys)
            for (key, targets) in object.relationships
            where model?.storage(ofRelationship: key, in: object.entity.name) == .register
                && object.storedRelationships[key] != targets
            {
                keys.append(key)
            }
            for key in keys.sorted() {
                // What the context read: an attribute when first read or set, a to-one when its relationship was.
                let read =
                    object.entity.attributesByName[key] != nil
                    ? cached[key] ?? .null
                    : object.storedRelationships[key]?.first.map { .object($0.objectID) } ?? .null
                guard read != stored[key] ?? .null else { continue }
                let conflict = MergeConflict(
                    objectID: object.objectID, property: key, objectValue: currentValue(of: object, key),
                    cachedValue: read, persistedValue: stored[key] ?? .null)
                conflicts.append(conflict)
                owners[conflict] = object
            }
        }
        guard !conflicts.isEmpty else { return stale }
        let resolutions = try policy.resolve(conflicts: conflicts)
        for conflict in conflicts {
            guard let object = owners[conflict] else { continue }
            switch policy.mergeType {
            case .rollback:
                dropped[object, default: []].formUnion(object.changedValues.keys)
                dropped[object, default: []].formUnion(object.relationships.keys)
            case .overwrite:
                var change = overrides[object.objectID] ?? ObjectChange(id: object.objectID)
                for attribute in object.entity.attributes {
                    change.values[attribute.name] = attributeValue(of: object, attribute.name)
                }
                overrides[object.objectID] = change
            default: break
            }
            switch resolutions[conflict] ?? .keepStoredValue {
            case .keepObjectValue: break
            case .keepStoredValue: dropped[object, default: []].insert(conflict.property)
            case .set(let value):
                // The one value of a save its context did not check as it was set: the store and every other device
                // would take a value the property cannot hold.
                do {
                    try model?.check(ObjectChange(id: object.objectID, values: [conflict.property: value]))
                } catch {
                    throw RecordStoreError(
                        .typeMismatch,
                        "the merge policy set \(object.entity.name).\(conflict.property) to \(value), which it cannot hold",
                        objectID: object.objectID, property: conflict.property)
                }
                dropped[object, default: []].insert(conflict.property)
                overrides[object.objectID, default: ObjectChange(id: object.objectID)].values[conflict.property] = value
            }
        }
        return stale
    }

    /// An attribute's or stored to-one's value as the context holds it.
    private func currentValue(of object: ManagedObject, _ key: String) -> RecordValue {
        if object.entity.attributesByName[key] != nil { return attributeValue(of: object, key) }
        return relationship(of: object, key).first.map { .object($0.objectID) } ?? .null
    }

    /// What saving `object` writes: its existence, its changed attributes and stored relationships.
    private func change(
        of object: ManagedObject, id: (ManagedObject) -> ManagedObjectID, dropping: Set<String>
    ) -> ObjectChange {
        var change = ObjectChange(id: id(object))
        let entity = object.entity
        let inserted = object.state == .inserted
        switch object.state {
        case .inserted: change.existence = true
        case .deleted: change.existence = false
        case .fault, .gone: break
        }
        if inserted, object.changedValues.count == entity.attributes.count {
            // Every attribute set (only attributes are): the values as they are, shared rather than copied.
            change.values = object.changedValues
        } else if inserted {
            // Every attribute, set or at its default: the entity's and the object's names walked together in order.
            change.values.reserveCapacity(entity.attributes.count)
            var set = object.changedValues.makeIterator()
            var next = set.next()
            for attribute in entity.attributesInNameOrder {
                // Equal names usually compare as equal bits at once: asked first, as most names are set.
                while let entry = next, entry.key != attribute.name, entry.key < attribute.name { next = set.next() }
                if let entry = next, entry.key == attribute.name {
                    change.values.append(attribute.name, entry.value)
                    next = set.next()
                } else {
                    change.values.append(attribute.name, attribute.defaultValue)
                }
            }
        } else if object.state == .fault {
            for (key, value) in object.changedValues where !dropping.contains(key) { change.values.append(key, value) }
        }
        for relationship in entity.relationships where !dropping.contains(relationship.name) {
            let key = relationship.name
            guard let now = object.relationships[key] ?? (inserted ? [] : nil) else { continue }
            let before = inserted ? [] : object.storedRelationships[key] ?? []
            guard inserted || now != before else { continue }
            switch model?.storage(ofRelationship: key, in: entity.name) {
            case .register:
                if object.state != .deleted { change.values[key] = now.first.map { .object(id($0)) } ?? .null }
            case .links:
                change.linksAdded = (change.linksAdded + now.subtracting(before).map { .init(key, id($0)) }).sorted()
                change.linksRemoved = (change.linksRemoved + before.subtracting(now).map { .init(key, id($0)) })
                    .sorted()
            case .inverse, nil: break
            }
        }
        // One link removed from one object and added to another of the same id (a key deleted and created again).
        change.linksRemoved.removeAll { Set(change.linksAdded).contains($0) }
        return change
    }

    /// After a save: the object's changes are the store's now. An object the store changed meanwhile (another
    /// context's save, an import) reads its values afresh when next used; the others keep theirs as saved.
    private func settle(
        _ object: ManagedObject, stale: Bool, schema: StoreSchema, id: (ManagedObject) -> ManagedObjectID
    ) {
        var snapshot: ObjectSnapshot?
        // A deleted object keeps the values it had, for whoever is told of its deletion.
        if !stale, object.state != .gone, let layout = try? schema.table(object.entity.name).layout {
            let entity = object.entity
            let attributes = entity.attributes
            let stored = object.snapshot
            // The layout lists the attributes first, in the entity's order, then the to-ones stored as registers.
            var values: [RecordValue] = []
            if object.state == .inserted, object.relationships.isEmpty {
                // Attributes only: the values set are the snapshot, over the defaults.
                snapshot = ObjectSnapshot(layout: layout, defaults: entity.defaultValues, values: object.changedValues)
            } else if object.state == .inserted {
                values.reserveCapacity(layout.properties.count)
                // The defaults, and over them the values set: the entity's names and the object's walked together in
                // order instead of searching the values for each name.
                values.append(contentsOf: entity.defaultValues)
                var position = 0
                let ordered = entity.attributesInNameOrder
                for (key, value) in object.changedValues {
                    while position < ordered.count, ordered[position].name != key, ordered[position].name < key {
                        position += 1
                    }
                    guard position < ordered.count, ordered[position].name == key else { continue }
                    values[entity.attributePlacesInNameOrder[position]] = value
                }
            } else {
                values.reserveCapacity(layout.properties.count)
            }
            if snapshot == nil {
                for (index, key) in layout.properties.enumerated() {
                    if index < attributes.count {
                        if object.state != .inserted { values.append(value(of: object, attributes[index])) }
                    } else if let targets = object.relationships[key] {
                        values.append(targets.first.map { .object(id($0)) } ?? .null)
                    } else {
                        values.append(stored?[key] ?? .null)
                    }
                }
                snapshot = ObjectSnapshot(layout: layout, values: values)
            }
        }
        let newID = id(object)
        if stale, object.state == .fault, (try? database().read({ try $0.isLive(object.objectID) })) == false {
            object.state = .gone
        }
        switch object.state {
        case .deleted, .gone:
            object.state = .gone
            if registered[object.objectID] === object { registered[object.objectID] = nil }
        case .inserted, .fault:
            object.state = .fault
            if newID != object.objectID {
                if registered[object.objectID] === object { registered[object.objectID] = nil }
                object.objectID = newID
                if let existing = registered[newID], existing !== object {
                    refresh(existing, mergeChanges: true)
                    snapshot = nil
                } else {
                    registered[newID] = object
                }
            }
        }
        object.changedValues = [:]
        object.refusedValues = []
        object.snapshot = snapshot
        if snapshot == nil {
            object.relationships = [:]
            object.storedRelationships = [:]
        } else {
            object.storedRelationships = object.relationships
        }
    }

    // MARK: - Deleting

    /// Deletes an object: its relationships are nullified, cascaded or (deny) checked at save, as their delete
    /// rules say. The delete is saved with the next ``save()``.
    public func delete(_ object: ManagedObject) {
        locked {
            guard object.managedObjectContext === self else { return }
            switch object.state {
            case .inserted:
                for relationship in object.entity.relationships where relationship.deleteRule == .cascade {
                    for target in self.relationship(of: object, relationship.name) { delete(target) }
                }
                detach(object)
                registerUndo(object) { context, object in
                    object.state = .fault
                    context.insert(object)
                }
            case .fault:
                let before = object.entity.relationships.map { ($0, relationship(of: object, $0.name)) }
                object.state = .deleted
                pending.insert(object)
                for (relationship, targets) in before {
                    switch relationship.deleteRule {
                    case .deny: continue
                    case .cascade:
                        for target in targets { delete(target) }
                        setRelationship([], of: object, relationship.name)
                    case .nullify: setRelationship([], of: object, relationship.name)
                    case .noAction: object.relationships[relationship.name] = []
                    }
                }
                registerUndo(object) { context, object in
                    guard object.state == .deleted else { return }
                    object.state = .fault
                    for (relationship, targets) in before {
                        context.setRelationship(targets, of: object, relationship.name)
                    }
                }
            case .deleted, .gone: break
            }
        }
    }

    // MARK: - Undoing everything, forgetting everything

    /// Drops every unsaved change: inserted objects are forgotten, deleted ones come back, changed ones read the
    /// store again. The undo manager's actions are removed.
    public func rollback() {
        locked {
            for object in pending {
                switch object.state {
                case .inserted:
                    pending.remove(object)
                    if registered[object.objectID] === object { registered[object.objectID] = nil }
                    object.state = .gone
                case .deleted: object.state = .fault
                case .fault, .gone: break
                }
                object.changedValues = [:]
                object.refusedValues = []
                object.relationships = [:]
                object.storedRelationships = [:]
                object.snapshot = nil
            }
            pending.removeAll()
            if let undoManager = storedUndoManager { MainActor.assumeIsolated { undoManager.removeAllActions() } }
        }
        notifyChangeObservers(ObjectIDChanges())
    }

    /// Forgets every object, saved or not: the context is as new. Objects held from before must not be used.
    public func reset() {
        locked {
            for object in registered.values { object.managedObjectContext = nil }
            registered.removeAll()
            pending.removeAll()
            if let undoManager = storedUndoManager { MainActor.assumeIsolated { undoManager.removeAllActions() } }
        }
        notifyChangeObservers(ObjectIDChanges())
    }

    /// Reads an object afresh from the store when next used. With `mergeChanges`, its unsaved changes stay on top
    /// of what it reads; without, they are dropped.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        locked {
            guard object.managedObjectContext === self, object.state != .inserted else { return }
            object.snapshot = nil
            if mergeChanges {
                for (key, targets) in object.relationships where object.storedRelationships[key] == targets {
                    object.relationships[key] = nil
                    object.storedRelationships[key] = nil
                }
            } else {
                object.changedValues = [:]
                object.relationships = [:]
                object.storedRelationships = [:]
                if object.state == .deleted { object.state = .fault }
                pending.remove(object)
            }
        }
    }

    /// Brings in what another context saved, or what an import applied (the book passes the coordinator's
    /// did-import notification here): objects it updated are read afresh, keeping this context's unsaved changes
    /// on top; objects it deleted are forgotten.
    public func mergeChanges(fromContextDidSave notification: Notification) {
        mergeChanges(ObjectIDChanges(userInfo: notification.userInfo))
    }

    /// Brings in changes given by id, as ``mergeChanges(fromContextDidSave:)``.
    public func mergeChanges(_ changes: ObjectIDChanges) {
        defer { notifyChangeObservers(changes) }
        locked {
            for id in changes.updated.union(changes.inserted) {
                guard let object = registered[id] else { continue }
                refresh(object, mergeChanges: true)
            }
            for id in changes.deleted {
                guard let object = registered[id] else { continue }
                object.state = .gone
                pending.remove(object)
                registered[id] = nil
            }
            // Relationships read before may point at what changed: read them again.
            for object in registered.values {
                for (key, targets) in object.relationships where object.storedRelationships[key] == targets {
                    object.relationships[key] = nil
                    object.storedRelationships[key] = nil
                }
            }
        }
    }

    /// Takes note of changes made so far. Core Data propagates deletes and groups undo here; this context does both
    /// as each change is made, so what is left is telling fetched results controllers of unsaved changes.
    public func processPendingChanges() {
        let changed = locked {
            ObjectIDChanges(updated: Set(pending.filter { $0.state == .fault }.map(\.objectID)))
        }
        notifyChangeObservers(changed)
    }
}

extension ObjectChange {
    /// Adds what another object of the same id saves (a key deleted and created again, or created twice): an insert
    /// wins over a delete, its values over these, and a link one adds over the same link the other removes.
    fileprivate mutating func combine(with other: ObjectChange) {
        if existence != true { existence = other.existence ?? existence }
        values.merge(other.values) { _, new in new }
        let added = Set(linksAdded + other.linksAdded)
        linksAdded = added.sorted()
        linksRemoved = Set(linksRemoved + other.linksRemoved).subtracting(added).sorted()
    }
}
