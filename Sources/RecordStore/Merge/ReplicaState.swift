import Foundation

/// A whole store as the merge sees it: every object's record and every link, each with its stamp.
///
/// The pure form of a store, for the rules and the tests that check them; the SQLite store applies the same merge
/// (``MergeTarget``) to the rows it loads.
package struct ReplicaState: Sendable, Hashable {
    package var objects: [ManagedObjectID: ObjectRecord] = [:]
    package var links: [LinkKey: Register<Bool>] = [:]

    package init() {}
}

extension ReplicaState: MergeTarget {
    package func record(_ id: ManagedObjectID) -> ObjectRecord? { objects[id] }
    package mutating func setRecord(_ record: ObjectRecord, for id: ManagedObjectID) { objects[id] = record }
    package mutating func insertNew(_ change: ObjectChange, stamp: Stamp) -> Bool {
        guard objects[change.id] == nil else { return false }
        var record = ObjectRecord()
        _ = record.merge(change, stamp: stamp)
        objects[change.id] = record
        return true
    }
    package func link(_ key: LinkKey) -> Register<Bool>? { links[key] }
    package mutating func setLink(_ link: Register<Bool>, for key: LinkKey) { links[key] = link }
}

extension ReplicaState {
    /// The ids of the live objects of `entity`, in order.
    package func liveObjects(of entity: String) -> [ManagedObjectID] {
        objects.filter { $0.key.entityName == entity && $0.value.isLive }.keys.sorted()
    }

    /// A to-one's live target, or an attribute's value, as an app reads it.
    package func value(of id: ManagedObjectID, _ property: String, model: ManagedObjectModel) -> RecordValue {
        guard let record = objects[id], record.isLive else { return .null }
        switch model.storage(ofRelationship: property, in: id.entityName) {
        case nil:
            return record.value(property)
        case .register:
            guard case .object(let target) = record.value(property), objects[target]?.isLive == true else {
                return .null
            }
            return .object(target)
        case .inverse(let entity, let inverse):
            return targets(of: id, relationshipStoredAs: .inverse(of: entity, relationship: inverse)).first.map {
                .object($0)
            } ?? .null
        case .links:
            return .null
        }
    }

    /// The live objects a relationship of `id` points at, as an app reads them.
    package func targets(of id: ManagedObjectID, _ relationship: String, model: ManagedObjectModel)
        -> Set<ManagedObjectID>
    {
        guard objects[id]?.isLive == true, let storage = model.storage(ofRelationship: relationship, in: id.entityName)
        else { return [] }
        switch storage {
        case .register:
            if case .object(let target) = value(of: id, relationship, model: model) { return [target] }
            return []
        case .links:
            return Set(
                links.filter { $0.key.source == id && $0.key.relationship == relationship && $0.value.value }
                    .map(\.key.target).filter { objects[$0]?.isLive == true })
        case .inverse:
            return Set(targets(of: id, relationshipStoredAs: storage))
        }
    }

    /// The live objects whose stored side points at `id`, latest first.
    private func targets(of id: ManagedObjectID, relationshipStoredAs storage: RelationshipStorage)
        -> [ManagedObjectID]
    {
        guard case .inverse(let entity, let inverse) = storage else { return [] }
        var pointing: [(Stamp, ManagedObjectID)] = []
        for (source, record) in objects where source.entityName == entity && record.isLive {
            if let register = record.values[inverse], register.value == .object(id) {
                pointing.append((register.stamp, source))
            }
        }
        for (key, register) in links where key.target == id && key.relationship == inverse && register.value {
            if key.source.entityName == entity, objects[key.source]?.isLive == true {
                pointing.append((register.stamp, key.source))
            }
        }
        return pointing.sorted { $0.0 > $1.0 }.map(\.1)
    }
}
