import Foundation
import GRDB
import GRDBSQLite
import SyncSimulation
import Testing
import UbiquityTestSupport

@testable import RecordStore

/// The store's database against the in-memory merge it must equal, on real SQLite files.
@Suite("Record store database", .ownThread(.computing))
struct RecordDatabaseTests {
    @Test(
        "the database holds what the in-memory merge holds, whatever the order and repeats of its logs",
        arguments: 0..<60)
    func mergesAsMemoryDoes(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed &+ 50_000)
        var devices = (0..<3).map { _ in MergeDevice(id: random.uuid()) }
        let written = try MergeDevice.randomHistory(&devices, random: &random)
        var memory = ReplicaState()
        for log in written { try memory.apply(log, model: TestModel.model) }
        try withTemporaryFolder { folder in
            let database = try RecordDatabase(
                url: folder.appendingPathComponent("store.sqlite"), model: TestModel.model)
            var delivery = written + (0..<written.count / 2).map { _ in written.randomElement(using: &random)! }
            delivery.shuffle(using: &random)
            var applied = 0
            for log in delivery {
                if try database.write({ try $0.importLog(log, bytes: log.encoded()) }) != nil { applied += 1 }
            }
            #expect(applied == written.count, "seed \(seed): each log is applied once")
            let stored = try database.read { try $0.replicaState() }
            #expect(stored == memory, "seed \(seed): the database differs from the merge in memory")
            try database.read { access in
                for entity in TestModel.model.entities {
                    let live = try access.liveSnapshots(of: entity.name).all
                    #expect(live.map(\.0).sorted() == memory.liveObjects(of: entity.name), "seed \(seed)")
                    for (id, snapshot) in live {
                        for attribute in entity.attributes {
                            #expect(
                                snapshot[attribute.name]
                                    == memory.value(of: id, attribute.name, model: TestModel.model),
                                "seed \(seed): \(id).\(attribute.name)")
                        }
                        for relationship in entity.relationships {
                            #expect(
                                try access.targets(of: id, relationship.name)
                                    == memory.targets(of: id, relationship.name, model: TestModel.model),
                                "seed \(seed): \(id).\(relationship.name)")
                        }
                    }
                }
            }
        }
    }

    @Test("a save stamps, applies and keeps its log; the log is written to the device's folder once")
    func saveAndExport() throws {
        try withTemporaryFolder { folder in
            let url = folder.appendingPathComponent("store.sqlite")
            let logs = folder.appendingPathComponent("logs", isDirectory: true)
            let database = try RecordDatabase(url: url, model: TestModel.model)
            let milk = ManagedObjectID(entityName: "Item", uuid: UUID())
            let family = ManagedObjectID.derived(entityName: "Tag", keyValues: [.string("Family")])
            let inserts = [
                ObjectChange(
                    id: milk, existence: true,
                    values: ["title": .string("Milk"), "quantity": .integer(2), "note": .null],
                    linksAdded: [.init("tags", family)]),
                ObjectChange(id: family, existence: true, values: ["name": .string("Family")]),
            ]
            let saved = try database.write { access in try access.save(inserts, physicalMilliseconds: 1_000) }
            let (log, changes) = try #require(saved)
            #expect(log.device == database.replica && log.sequence == 1)
            #expect(changes.inserted == [milk, family])
            // New objects' rows, written straight from their changes, read back as the changes merged into nothing.
            for change in inserts {
                var merged = ObjectRecord()
                _ = merged.merge(change, stamp: log.stamp)
                let stored = try database.read { try $0.record(change.id) }
                #expect(stored == merged, "\(change.id)")
            }
            #expect(try database.exportOutbox(to: logs) == 1)
            #expect(try database.exportOutbox(to: logs) == 0, "an exported log is not written again")
            let file = logs.appendingPathComponent(RecordDatabase.logFileName(1))
            #expect(try TransactionLog(decoding: Array(Data(contentsOf: file))) == log)

            // Reopened, the store goes on from its clock and sequence, and reads what it saved.
            let reopened = try RecordDatabase(url: url, model: TestModel.model)
            #expect(reopened.replica == database.replica)
            let next = try reopened.write { access in
                try access.save([ObjectChange(id: milk, values: ["note": .string("organic")])], physicalMilliseconds: 1)
            }
            #expect(next?.0.sequence == 2)
            #expect(next.map { $0.0.time > log.time } == true, "a clock that went back still moves forward")
            try reopened.read { access in
                let snapshot = try #require(try access.snapshot(milk))
                #expect(snapshot["title"] == .string("Milk") && snapshot["note"] == .string("organic"))
                #expect(try access.targets(of: family, "items") == [milk])
            }
        }
    }

    @Test("a log of a newer model is kept, applied once the store opens with that model, and never twice")
    func newerModelKept() throws {
        try withTemporaryFolder { folder in
            let url = folder.appendingPathComponent("store.sqlite")
            let database = try RecordDatabase(url: url, model: TestModel.model)
            let item = ManagedObjectID(entityName: "Item", uuid: UUID())
            let log = TransactionLog(
                device: UUID(), sequence: 1, time: 5 << 16, modelVersion: 2,
                changes: [ObjectChange(id: item, existence: true, values: ["title": .string("Tea")])])
            #expect(try database.write { try $0.importLog(log, bytes: log.encoded()) } == nil)
            #expect(try database.read { try $0.snapshot(item) } == nil)

            let upgraded = ManagedObjectModel(version: 2, entities: TestModel.model.entities)
            let reopened = try RecordDatabase(url: url, model: upgraded)
            let pending = try reopened.read { try $0.pendingLogs() }
            #expect(pending.count == 1)
            let changes = try reopened.write { access in
                try access.importLog(try TransactionLog(decoding: pending[0]), bytes: pending[0])
            }
            #expect(changes?.inserted == [item])
            #expect(try reopened.read { try $0.pendingLogs() }.isEmpty)
            #expect(try reopened.write { try $0.importLog(log, bytes: log.encoded()) } == nil)

            let error = #expect(throws: RecordStoreError.self) { try RecordDatabase(url: url, model: TestModel.model) }
            #expect(error?.code == .newerModel, "an older app does not open a store a newer one wrote")
        }
    }

    @Test("a value SQLite refuses to bind fails the write, and nothing is stored as NULL in its place")
    func refusedBindFailsTheWrite() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (v BLOB)")
            // A value over SQLite's length limit (1 GB by default; 100 bytes here) is refused as it is bound.
            _ = sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, 100)
            let statement = try db.makeStatement(sql: "INSERT INTO t (v) VALUES (?)")
            do {
                try statement.run { $0.bind(bytes: Data(count: 200)) }
                Issue.record("a refused parameter was run as NULL")
            } catch let error as DatabaseError {
                #expect(error.resultCode == .SQLITE_TOOBIG)
            }
            try statement.run { $0.bind(bytes: Data(count: 50)) }
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") == 1)
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t WHERE v IS NULL") == 0)
        }
    }

    @Test("values of every type read back as written, NaN and extremes included")
    func valuesRoundTrip() throws {
        let entity = EntityDescription(
            name: "Everything",
            attributes: AttributeType.allCases.map { AttributeDescription(name: "v_\($0)", type: $0, isOptional: true) }
        )
        let model = ManagedObjectModel(entities: [entity])
        let samples: [AttributeType: [RecordValue]] = [
            // Text of at most 15 bytes and longer text are kept apart in a fetch's rows.
            .string: [.string(""), .string("naïve 🍞\u{0}end"), .string("longer than fifteen bytes, naïve 🍞")],
            .integer16: [.integer(Int64(Int16.min)), .integer(Int64(Int16.max))],
            .integer32: [.integer(Int64(Int32.min))],
            .integer64: [.integer(.min), .integer(.max)],
            .double: [.double(.nan), .double(-.infinity), .double(-0.0), .double(.leastNonzeroMagnitude)],
            .decimal: [.decimal(Decimal(string: "12345678901234567890.123456789")!), .decimal(-1)],
            .boolean: [.boolean(true), .boolean(false)],
            .date: [.date(Date(timeIntervalSinceReferenceDate: 123.456)), .date(.distantPast)],
            .uuid: [.uuid(UUID())],
            .uri: [.url(URL(string: "https://example.com/a%20b?c=d#e")!)],
            .binaryData: [.data(Data()), .data(Data((0..<300).map { UInt8($0 % 256) }))],
        ]
        try withTemporaryFolder { folder in
            let database = try RecordDatabase(url: folder.appendingPathComponent("store.sqlite"), model: model)
            for round in 0..<3 {
                var values: PropertyMap<RecordValue> = [:]
                for type in AttributeType.allCases {
                    let options = samples[type]!
                    values["v_\(type)"] = options[min(round, options.count - 1)]
                }
                let id = ManagedObjectID(entityName: "Everything", uuid: UUID())
                _ = try database.write { access in
                    try access.save([ObjectChange(id: id, existence: true, values: values)], physicalMilliseconds: 9)
                }
                let snapshot = try #require(try database.read { try $0.snapshot(id) })
                // A fetch reads rows its own way (SQLite's calls, not GRDB's rows): the same values either way.
                let fetched = try database.read { try $0.liveSnapshots(of: "Everything").all }.first { $0.0 == id }?.1
                #expect(fetched?.values.count == snapshot.values.count)
                for (name, value) in fetched?.byProperty ?? [:] {
                    if case .double(let number) = value, number.isNaN {
                        guard case .double(let read) = snapshot[name], read.isNaN else {
                            Issue.record("NaN fetched, \(String(describing: snapshot[name])) read")
                            continue
                        }
                    } else {
                        #expect(snapshot[name] == value, "\(name) in a fetch")
                    }
                }
                for (name, value) in values {
                    if case .double(let number) = value, number.isNaN {
                        guard case .double(let read) = snapshot[name] else {
                            Issue.record("NaN read back as \(String(describing: snapshot[name]))")
                            continue
                        }
                        #expect(read.isNaN)
                    } else {
                        #expect(snapshot[name] == value, "\(name)")
                    }
                }
            }
        }
    }

    @Test("an attribute never set reads as its default, one set to nothing as nothing, one by one and in a fetch")
    func defaultsAndNothing() throws {
        let entity = EntityDescription(
            name: "Counter",
            attributes: [
                AttributeDescription(name: "count", type: .integer64, isOptional: true, defaultValue: .integer(5)),
                AttributeDescription(name: "label", type: .string, isOptional: true),
            ])
        let model = ManagedObjectModel(entities: [entity])
        try withTemporaryFolder { folder in
            let database = try RecordDatabase(url: folder.appendingPathComponent("store.sqlite"), model: model)
            let unset = ManagedObjectID(entityName: "Counter", uuid: UUID())
            let emptied = ManagedObjectID(entityName: "Counter", uuid: UUID())
            _ = try database.write { access in
                try access.save(
                    [
                        ObjectChange(id: unset, existence: true, values: ["label": .string("unset")]),
                        ObjectChange(id: emptied, existence: true, values: ["count": .null, "label": .null]),
                    ], physicalMilliseconds: 9)
            }
            try database.read { access in
                let fetched = Dictionary(uniqueKeysWithValues: try access.liveSnapshots(of: "Counter").all)
                let one: [ManagedObjectID: ObjectSnapshot?] = [
                    unset: try access.snapshot(unset), emptied: try access.snapshot(emptied),
                ]
                let views: [[ManagedObjectID: ObjectSnapshot?]] = [fetched.mapValues { $0 }, one]
                for snapshots in views {
                    #expect(snapshots[unset]??.byProperty == ["count": .integer(5), "label": .string("unset")])
                    #expect(snapshots[emptied]??.byProperty == ["count": .null, "label": .null])
                }
            }
            // The merge state read back: a register for each property set, at the save's stamp. The stamps of the
            // object whose set values are all in its columns are implied by them and take no room in its row.
            func stored(_ id: ManagedObjectID) throws -> (record: ObjectRecord?, stampBytes: Int) {
                try database.read { access in
                    let bytes = try Data.fetchOne(
                        access.db, sql: "SELECT _stamps FROM e_Counter WHERE id = ?", arguments: [id.uuid.data])
                    return (try access.record(id), bytes?.count ?? -1)
                }
            }
            let (unsetRecord, unsetBytes) = try stored(unset)
            let stamp = try #require(unsetRecord?.existence?.stamp)
            #expect(unsetRecord?.values == ["label": Register(.string("unset"), stamp: stamp)])
            #expect(unsetBytes == 0, "implied by the columns")
            let (emptiedRecord, emptiedBytes) = try stored(emptied)
            #expect(
                emptiedRecord?.values == [
                    "count": Register(.null, stamp: stamp), "label": Register(.null, stamp: stamp),
                ])
            #expect(emptiedBytes > 0, "values set to nothing are stamped in the list")
            // A later change stamps the object's registers apart: the list again, read back register by register.
            _ = try database.write { access in
                try access.save(
                    [ObjectChange(id: unset, existence: nil, values: ["count": .integer(7)])], physicalMilliseconds: 10)
            }
            let (changed, changedBytes) = try stored(unset)
            let later = try #require(changed?.values["count"]?.stamp)
            #expect(later > stamp)
            #expect(changed?.existence?.stamp == stamp)
            #expect(
                changed?.values == [
                    "count": Register(.integer(7), stamp: later), "label": Register(.string("unset"), stamp: stamp),
                ])
            #expect(changedBytes > 0)
        }
    }

    @Test("a store restored from before its last save never reuses the number of a log already written")
    func sequenceNeverReused() throws {
        try withTemporaryFolder { folder in
            let content = folder.appendingPathComponent("TransactionLogs", isDirectory: true)
            let fixture = try StoreFixture(in: folder, name: "a", content: content)
            let context = fixture.context()
            let milk = Item(context: context)
            milk.title = "Milk"
            try context.saveWritingLogs()
            let restored = try DatabaseQueue(path: folder.appendingPathComponent("restored.sqlite").path)
            try fixture.store.database.writer.backup(to: restored)
            try restored.close()
            milk.title = "Whole milk"
            try context.saveWritingLogs()

            let back = try StoreFixture(in: folder, name: "restored", content: content)
            #expect(back.store.identifier == fixture.store.identifier)
            let saved = try back.store.database.write { access in
                try access.save(
                    [ObjectChange(id: milk.objectID, values: ["note": .string("organic")])], physicalMilliseconds: 1)
            }
            #expect(saved?.0.sequence == 3, "log 2 is in the folder: the next save is 3")
        }
    }
}

extension FetchedRows {
    /// Each row's id and snapshot.
    var all: [(ManagedObjectID, ObjectSnapshot)] { (0..<count).map { (id(at: $0), snapshot(at: $0)) } }
}
