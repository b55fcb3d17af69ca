import Crypto
import Foundation
import SyncSimulation
import Testing

@testable import RecordStore

@Suite("Transaction log files")
struct TransactionLogCodingTests {
    static func sample() throws -> TransactionLog {
        var random = SeededGenerator(seed: 3)
        var device = MergeDevice(id: random.uuid())
        for _ in 0..<5 { _ = try device.save(random: &random) }
        return try device.save { device, changes in
            let item = device.newItem(title: "Ünïcode ✓", random: &random, into: &changes)
            device.tag(item, "Family", into: &changes)
            changes[item]?.values["note"] = .string(String(repeating: "x", count: 300))
        }
    }

    @Test("every kind of value reads back as written")
    func roundTrip() throws {
        let id = ManagedObjectID(entityName: "Item", uuid: UUID())
        let values: PropertyMap<RecordValue> = [
            "a": .null, "b": .string("text"), "c": .integer(-42), "d": .double(-0.0),
            "e": .decimal(Decimal(string: "12.345")!),
            "f": .boolean(true), "g": .date(Date(timeIntervalSinceReferenceDate: 1.5)), "h": .uuid(UUID()),
            "i": .url(URL(string: "https://example.com/a?b=c")!), "j": .data(Data([0, 1, 255])), "k": .object(id),
        ]
        let log = TransactionLog(
            device: UUID(), sequence: 9, time: 123 << 16, modelVersion: 3,
            changes: [ObjectChange(id: id, existence: true, values: values, linksAdded: [.init("tags", id)])])
        #expect(try TransactionLog(decoding: log.encoded()) == log)
        #expect(try TransactionLog.header(of: log.encoded()).modelVersion == 3)
    }

    @Test("a truncated, altered or foreign file is refused whole")
    func corruptFiles() throws {
        let bytes = try Self.sample().encoded()
        var cases: [[UInt8]] = [[], Array(bytes.prefix(bytes.count - 1)), Array(bytes.prefix(40)), Array("hello".utf8)]
        for offset in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 64)) {
            var altered = bytes
            altered[offset] ^= 0x40
            cases.append(altered)
        }
        for bad in cases {
            #expect {
                try TransactionLog(decoding: bad)
            } throws: { ($0 as? RecordStoreError)?.code == .corruptLog }
        }
    }

    @Test("a hostile log whose digest matches is refused for counts past its end and names past its table")
    func hostileCounts() throws {
        var writer = LogWriter()
        writer.writeBytes(TransactionLog.magic)
        writer.writeUUID(UUID())
        writer.writeFixed(1)
        writer.writeFixed(1)
        writer.writeVarint(1)
        writer.writeVarint(1)
        writer.writeString("Item")
        writer.writeVarint(UInt64.max >> 1)
        let countTooBig = Self.sealed(writer.bytes)
        #expect(throws: RecordStoreError.self) { try TransactionLog(decoding: countTooBig) }

        var nameOutside = LogWriter()
        nameOutside.writeBytes(writer.bytes.dropLast(9))
        nameOutside.writeVarint(1)
        nameOutside.writeVarint(5)
        nameOutside.writeBytes([UInt8](repeating: 0, count: 40))
        #expect(throws: RecordStoreError.self) { try TransactionLog(decoding: Self.sealed(nameOutside.bytes)) }
    }

    @Test("a log naming what the model lacks, or of a newer model, changes nothing")
    func checkedAgainstTheModel() throws {
        let item = ManagedObjectID(entityName: "Item", uuid: UUID())
        let bad: [ObjectChange] = [
            ObjectChange(id: ManagedObjectID(entityName: "Ghost", uuid: UUID()), existence: true),
            ObjectChange(id: item, values: ["colour": .string("red")]),
            ObjectChange(id: item, values: ["quantity": .integer(70_000)]),
            ObjectChange(id: item, values: ["title": .integer(1)]),
            ObjectChange(id: item, values: ["title": .null]),
            ObjectChange(id: item, values: ["list": .object(item)]),
            ObjectChange(id: item, linksAdded: [.init("list", item)]),
            ObjectChange(id: item, linksAdded: [.init("tags", item)]),
        ]
        for change in bad {
            var state = ReplicaState()
            let good = ObjectChange(id: ManagedObjectID(entityName: "Item", uuid: UUID()), existence: true)
            let log = TransactionLog(device: UUID(), sequence: 1, time: 1, modelVersion: 1, changes: [good, change])
            #expect(throws: RecordStoreError.self, "\(change)") { try state.apply(log, model: TestModel.model) }
            #expect(state == ReplicaState())
        }
        var state = ReplicaState()
        let newer = TransactionLog(device: UUID(), sequence: 1, time: 1, modelVersion: 2, changes: [])
        #expect {
            try state.apply(newer, model: TestModel.model)
        } throws: { ($0 as? RecordStoreError)?.code == .newerModel }
    }

    static func sealed(_ bytes: [UInt8]) -> [UInt8] {
        var writer = LogWriter()
        writer.writeBytes(bytes)
        writer.writeBytes(SHA256.hash(data: bytes))
        return writer.bytes
    }
}
