import Foundation
import SyncSimulation

@testable import RecordStore

/// One device of the merge tests: a replica, its clock and its saves, with no disk and no context.
///
/// Its saves are what a context would write: an insert sets every attribute, a delete removes the links the device
/// sees and deletes what cascades.
struct MergeDevice {
    let id: UUID
    var state = ReplicaState()
    var clock = HybridLogicalClock()
    var sequence: UInt64 = 0
    /// The device's wall clock in milliseconds; devices' clocks disagree.
    var physical: UInt64
    let model = TestModel.model

    init(id: UUID) {
        self.id = id
        self.physical = 1_000_000 + UInt64(id.uuid.0) * 7
    }

    /// Applies another device's log, as an import does.
    mutating func receive(_ log: TransactionLog) throws {
        guard log.device != id else { return }
        clock.observe(log.time)
        try state.apply(log, model: model)
    }

    /// Saves what `build` changes (nothing saved if it changes nothing).
    mutating func save(
        _ build: (inout MergeDevice, inout [ManagedObjectID: ObjectChange]) throws -> Void
    ) throws -> TransactionLog {
        var changes: [ManagedObjectID: ObjectChange] = [:]
        try build(&self, &changes)
        physical += 5
        sequence += 1
        let log = TransactionLog(
            device: id, sequence: sequence, time: clock.tick(physicalMilliseconds: physical), modelVersion: 1,
            changes: changes.values.sorted { $0.id < $1.id }.map {
                var change = $0
                change.linksAdded.sort()
                change.linksRemoved.sort()
                return change
            })
        let decoded = try TransactionLog(decoding: log.encoded())
        precondition(decoded == log, "a log reads back as written")
        try state.apply(decoded, model: model)
        return decoded
    }

    /// A random save of one to four operations; `nil` when none applied.
    mutating func save(random: inout SeededGenerator) throws -> TransactionLog? {
        physical = physical + UInt64.random(in: 0...40, using: &random)
        let log = try save { device, changes in
            for _ in 0..<Int.random(in: 1...4, using: &random) { device.randomOperation(&random, into: &changes) }
        }
        return log.changes.isEmpty ? nil : log
    }

    /// Random saves on `devices`, each sometimes receiving a log written before; the logs written, in order.
    static func randomHistory(_ devices: inout [MergeDevice], random: inout SeededGenerator) throws
        -> [TransactionLog]
    {
        var written: [TransactionLog] = []
        for _ in 0..<Int.random(in: 10...40, using: &random) {
            let index = Int.random(in: 0..<devices.count, using: &random)
            if random.chance(0.55) || written.isEmpty {
                let log = try devices[index].save(random: &random)
                if let log { written.append(log) }
            } else {
                try devices[index].receive(written.randomElement(using: &random)!)
            }
        }
        return written
    }

    func live(_ entity: String) -> [ManagedObjectID] { state.liveObjects(of: entity) }

    @discardableResult
    func newItem(title: String, random: inout SeededGenerator, into changes: inout [ManagedObjectID: ObjectChange])
        -> ManagedObjectID
    {
        let id = ManagedObjectID(entityName: "Item", uuid: random.uuid())
        changes[id] = ObjectChange(
            id: id, existence: true,
            values: ["title": .string(title), "quantity": .integer(1), "note": .null, "list": .null])
        return id
    }

    /// Tags `item` (if any) with the tag named `name`, creating the tag if the device has none of that name.
    func tag(_ item: ManagedObjectID?, _ name: String, into changes: inout [ManagedObjectID: ObjectChange]) {
        let tag = ManagedObjectID.derived(entityName: "Tag", keyValues: [.string(name)])
        if state.objects[tag]?.isLive != true && changes[tag] == nil {
            changes[tag] = ObjectChange(id: tag, existence: true, values: ["name": .string(name)])
        }
        if let item { link(item, tag, present: true, into: &changes) }
    }

    /// Adds or removes one link of an item's tags; the last of a save's changes to a link is the one it keeps.
    func link(
        _ item: ManagedObjectID, _ tag: ManagedObjectID, present: Bool,
        into changes: inout [ManagedObjectID: ObjectChange]
    ) {
        let link = ObjectChange.Link("tags", tag)
        var change = changes[item] ?? ObjectChange(id: item)
        change.linksAdded.removeAll { $0 == link }
        change.linksRemoved.removeAll { $0 == link }
        if present { change.linksAdded.append(link) } else { change.linksRemoved.append(link) }
        changes[item] = change
    }

    /// Deletes an object as a context does: removes the stored links it and others hold to it, cascades.
    func delete(_ id: ManagedObjectID, into changes: inout [ManagedObjectID: ObjectChange]) {
        changes[id, default: ObjectChange(id: id)].existence = false
        switch id.entityName {
        case "Item":
            for tag in state.targets(of: id, "tags", model: model) { link(id, tag, present: false, into: &changes) }
        case "Tag":
            for item in state.targets(of: id, "items", model: model) { link(item, id, present: false, into: &changes) }
        default:
            for item in state.targets(of: id, "items", model: model) where changes[item]?.existence != false {
                delete(item, into: &changes)
            }
        }
    }

    mutating func randomOperation(_ random: inout SeededGenerator, into changes: inout [ManagedObjectID: ObjectChange])
    {
        let items = live("Item").filter { changes[$0]?.existence != false }
        let lists = live("List").filter { changes[$0]?.existence != false }
        let names = ["Family", "Work", "Food", "Party"]
        func touch(_ id: ManagedObjectID) -> ObjectChange { changes[id] ?? ObjectChange(id: id) }
        switch Int.random(in: 0..<10, using: &random) {
        case 0: newItem(title: "item \(random.next() % 100)", random: &random, into: &changes)
        case 1:
            let list = ManagedObjectID(entityName: "List", uuid: random.uuid())
            changes[list] = ObjectChange(id: list, existence: true, values: ["name": .string("list")])
        case 2, 3:
            guard let item = items.randomElement(using: &random) else { return }
            var change = touch(item)
            if random.chance(0.5) {
                change.values["title"] = .string("title \(random.next() % 50)")
            } else {
                change.values["quantity"] = .integer(Int64.random(in: 1...12, using: &random))
            }
            changes[item] = change
        case 4:
            guard let item = items.randomElement(using: &random) else { return }
            changes[item, default: ObjectChange(id: item)].values["list"] =
                lists.randomElement(using: &random).map { .object($0) } ?? .null
        case 5, 6:
            guard let item = items.randomElement(using: &random) else { return }
            tag(item, names.randomElement(using: &random)!, into: &changes)
        case 7:
            guard let item = items.randomElement(using: &random),
                let tag = state.targets(of: item, "tags", model: model).randomElement(using: &random)
            else { return }
            link(item, tag, present: false, into: &changes)
        case 8:
            guard let item = items.randomElement(using: &random) else { return }
            delete(item, into: &changes)
        default:
            let candidates = live("Tag") + lists
            guard let victim = candidates.randomElement(using: &random), changes[victim] == nil else { return }
            delete(victim, into: &changes)
        }
    }

    /// What an app reads: each live object's attributes and relationships.
    var view: [ManagedObjectID: [String: String]] {
        var view: [ManagedObjectID: [String: String]] = [:]
        for entity in model.entities {
            for id in state.liveObjects(of: entity.name) {
                var properties: [String: String] = [:]
                for attribute in entity.attributes {
                    properties[attribute.name] = "\(state.value(of: id, attribute.name, model: model))"
                }
                for relationship in entity.relationships {
                    properties[relationship.name] =
                        "\(state.targets(of: id, relationship.name, model: model).sorted())"
                }
                view[id] = properties
            }
        }
        return view
    }
}
