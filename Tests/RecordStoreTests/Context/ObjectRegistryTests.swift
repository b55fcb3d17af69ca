import Foundation
import SyncSimulation
import Testing

@testable import RecordStore

/// The table a context finds its objects in: whatever is registered, replaced and removed, in any order, it answers
/// as a dictionary of the same ids would, including ids that share their first bytes, removals inside runs, and
/// objects a fetch appended without placing them in the table yet.
@Suite("Object registry")
struct ObjectRegistryTests {
    @Test("random registrations, replacements and removals answer as a dictionary", arguments: 0..<40)
    func againstDictionary(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let entity = EntityDescription(name: "Item")
        // A pool of ids to draw from, small enough to be drawn again; some share all but their last byte, some their
        // UUID but not their entity or temporariness (different ids all the same).
        var ids: [ManagedObjectID] = []
        for index in 0..<(40 + Int(random.next() % 200)) {
            var bytes = (0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if index % 3 == 0 { bytes = Array(repeating: 7, count: 15) + [UInt8(index % 256)] }
            let uuid = UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) })
            ids.append(ManagedObjectID(entityName: "Item", uuid: uuid))
            if index % 7 == 0 { ids.append(ManagedObjectID(entityName: "Tag", uuid: uuid)) }
            if index % 11 == 0 { ids.append(ManagedObjectID(entityName: "Item", uuid: uuid, isTemporaryID: true)) }
        }
        var registry = ObjectRegistry()
        var model: [ManagedObjectID: ManagedObject] = [:]
        for step in 0..<2_000 {
            let id = ids[Int(random.next() % UInt64(ids.count))]
            switch random.next() % 7 {
            case 0, 1:
                let object = ManagedObject(entity: entity, objectID: id)
                registry[id] = object
                model[id] = object
            case 2:
                let made = registry.object(for: id) { ManagedObject(entity: entity, objectID: id) }
                if let existing = model[id] {
                    #expect(made === existing, "seed \(seed), step \(step): a registered object is found, not made")
                }
                model[id] = made
            case 3, 4:
                registry[id] = nil
                model[id] = nil
            case 5:
                // A fetch's objects, appended unindexed: ids no registered object has, distinct.
                var appended: Set<ManagedObjectID> = []
                for _ in 0..<Int(random.next() % 40) {
                    let fresh = ids[Int(random.next() % UInt64(ids.count))]
                    guard model[fresh] == nil, appended.insert(fresh).inserted else { continue }
                    let object = ManagedObject(entity: entity, objectID: fresh)
                    registry.appendUnindexed(object)
                    model[fresh] = object
                }
            default:
                if random.next() % 50 == 0 {
                    registry.removeAll()
                    model.removeAll()
                } else {
                    registry.reserveCapacity(registry.count + Int(random.next() % 500))
                }
            }
            #expect(registry.count == model.count, "seed \(seed), step \(step)")
            // Probed now and then, so that several changes meet objects not yet placed in the table.
            guard random.next() % 3 == 0 else { continue }
            for probe in ids where registry[probe] !== model[probe] {
                Issue.record("seed \(seed), step \(step): \(probe) answers \(String(describing: registry[probe]))")
                return
            }
        }
        #expect(Set(registry.values.map(ObjectIdentifier.init)) == Set(model.values.map(ObjectIdentifier.init)))
        #expect(registry.values.count == model.count, "each object listed once")
        // The registry holds each of its objects once and lets go of them: with it emptied, nothing keeps them.
        let watched = registry.values.map(WeakObject.init)
        model.removeAll()
        #expect(watched.allSatisfy { $0.object != nil }, "the registry keeps its objects alive")
        registry.removeAll()
        #expect(watched.allSatisfy { $0.object == nil }, "and releases them")
    }
}

private struct WeakObject {
    weak var object: ManagedObject?
    init(_ object: ManagedObject) { self.object = object }
}
