import Foundation
import SyncSimulation
import Testing
import UbiquityTestSupport

@testable import RecordStore

/// Random saves on three devices, their logs delivered in random orders and more than once: every device ends
/// with the same store, object for object and link for link.
@Suite("Record store convergence", .ownThread(.computing))
struct ConvergenceTests {
    @Test("three devices converge whatever the order and number of times their logs arrive", arguments: 0..<300)
    func converge(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        var devices = (0..<3).map { _ in MergeDevice(id: random.uuid()) }
        let written = try MergeDevice.randomHistory(&devices, random: &random)
        for index in devices.indices {
            var delivery = written + (0..<written.count / 3).map { _ in written.randomElement(using: &random)! }
            delivery.shuffle(using: &random)
            for log in delivery { try devices[index].receive(log) }
        }
        var fresh = ReplicaState()
        for log in written.shuffled(using: &random) { try fresh.apply(log, model: TestModel.model) }
        for device in devices {
            #expect(device.state == devices[0].state, "seed \(seed): device \(device.id) differs")
            #expect(device.view == devices[0].view, "seed \(seed): what the app reads differs")
        }
        #expect(fresh == devices[0].state, "seed \(seed): the logs applied once in another order differ")
    }

    @Test("tags created on two devices under one name are one tag with the items of both")
    func uniquenessKeyMerges() throws {
        var random = SeededGenerator(seed: 7)
        var a = MergeDevice(id: random.uuid())
        var b = MergeDevice(id: random.uuid())
        let logA = try a.save { device, changes in
            let item = device.newItem(title: "Milk", random: &random, into: &changes)
            device.tag(item, "Family", into: &changes)
        }
        let logB = try b.save { device, changes in
            let item = device.newItem(title: "Bread", random: &random, into: &changes)
            device.tag(item, "Family", into: &changes)
        }
        try a.receive(logB)
        try b.receive(logA)
        #expect(a.state == b.state)
        let tags = a.state.liveObjects(of: "Tag")
        #expect(tags.count == 1)
        let items = a.state.targets(of: tags[0], "items", model: TestModel.model)
        #expect(
            Set(items.map { a.state.value(of: $0, "title", model: TestModel.model) }) == [
                .string("Milk"), .string("Bread"),
            ])
    }

    @Test("a delete wins over a concurrent edit, and a later insert of the same key brings the object back")
    func deleteAgainstEdit() throws {
        var random = SeededGenerator(seed: 11)
        var a = MergeDevice(id: random.uuid())
        var b = MergeDevice(id: random.uuid())
        var item: ManagedObjectID!
        let created = try a.save { device, changes in
            item = device.newItem(title: "Eggs", random: &random, into: &changes)
        }
        try b.receive(created)
        let edit = try b.save { _, changes in
            changes[item, default: ObjectChange(id: item)].values["title"] = .string("Duck eggs")
        }
        let delete = try a.save { _, changes in changes[item] = ObjectChange(id: item, existence: false) }
        try a.receive(edit)
        try b.receive(delete)
        #expect(a.state == b.state)
        #expect(a.state.objects[item]?.isLive == false)

        let family = ManagedObjectID.derived(entityName: "Tag", keyValues: [.string("Family")])
        try b.receive(try a.save { device, changes in device.tag(nil, "Family", into: &changes) })
        try a.receive(try b.save { _, changes in changes[family] = ObjectChange(id: family, existence: false) })
        #expect(a.state.objects[family]?.isLive == false)
        try b.receive(try a.save { device, changes in device.tag(nil, "Family", into: &changes) })
        #expect(a.state == b.state)
        #expect(b.state.objects[family]?.isLive == true)
    }
}
