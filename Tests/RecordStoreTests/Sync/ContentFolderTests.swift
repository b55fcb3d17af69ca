import Foundation
import Synchronization
import Testing
import UbiquityTestSupport

@testable import RecordStore

/// Two devices' stores sharing one content folder, as two machines share a container once their engines have
/// synced it: each save appears as a log, the other store imports it when the file system says it arrived.
@Suite("Record store imports")
struct ContentFolderTests {
    @Test("items and tags saved on A appear on B with a did-import naming them; concurrent edits converge")
    func twoDevicesConverge() async throws {
        try await withTemporaryFolder { folder in
            let content = folder.appendingPathComponent("container/TransactionLogs", isDirectory: true)
            let a = try StoreFixture(in: folder, name: "a", content: content)
            let b = try StoreFixture(in: folder, name: "b", content: content)
            let importsOnB = ImportRecorder(b.coordinator)
            let importsOnA = ImportRecorder(a.coordinator)

            let onA = a.context()
            let milk = Item(context: onA)
            milk.title = "Milk"
            let family = Tag(context: onA)
            family.name = "Family"
            milk.tags = [family]
            try onA.save()
            let milkID = milk.objectID
            let first = try await importsOnB.next { $0.inserted.contains(milkID) }
            #expect(first.inserted == [milk.objectID, family.objectID])

            // Concurrent edits: the title on A, the tags and quantity on B.
            let onB = b.context()
            let milkOnB = try #require(try onB.existingObject(with: milk.objectID) as? Item)
            #expect(milkOnB.tags.map(\.name) == ["Family"])
            let work = Tag(context: onB)
            work.name = "Work"
            milkOnB.tags.insert(work)
            milkOnB.quantity = 2
            milk.title = "Whole milk"
            try onA.save()
            try onB.save()
            try await importsOnA.next { $0.updated.contains(milkID) }
            try await importsOnB.next { $0.updated.contains(milkID) }

            for fixture in [a, b] {
                let context = fixture.context()
                let item = try #require(try context.existingObject(with: milk.objectID) as? Item)
                #expect(item.title == "Whole milk" && item.quantity == 2)
                #expect(Set(item.tags.map(\.name)) == ["Family", "Work"])
            }
            let stateA = try a.store.database.read { try $0.replicaState() }
            let stateB = try b.store.database.read { try $0.replicaState() }
            #expect(stateA == stateB, "both stores hold the same records and links")
        }
    }

    @Test("a corrupt or hostile log is skipped with the rest applied, and a store added later imports what is there")
    func badLogsAndLateStores() throws {
        try withTemporaryFolder { folder in
            let content = folder.appendingPathComponent("TransactionLogs", isDirectory: true)
            let a = try StoreFixture(in: folder, name: "a", content: content)
            let onA = a.context()
            for title in ["Milk", "Bread"] {
                let item = Item(context: onA)
                item.title = title
                try onA.saveWritingLogs()
            }
            let logs = content.appendingPathComponent("Grocery/\(a.store.identifier)", isDirectory: true)
            let names = try FileManager.default.contentsOfDirectory(atPath: logs.path).filter { $0.hasSuffix(".log") }
                .sorted()
            #expect(names == ["000000000001.log", "000000000002.log"])

            // A stranger's folder: a truncated log, a log under another device's name, and garbage.
            let stranger = content.appendingPathComponent("Grocery/\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: stranger, withIntermediateDirectories: true)
            let good = try Data(contentsOf: logs.appendingPathComponent(names[0]))
            try good.prefix(good.count - 5).write(to: stranger.appendingPathComponent("000000000001.log"))
            // A whole log of a device that is not the folder's: it would insert an item if its name were not checked.
            let intruder = TransactionLog(
                device: UUID(), sequence: 2, time: 1 << 20, modelVersion: 1,
                changes: [
                    ObjectChange(
                        id: ManagedObjectID(entityName: "Item", uuid: UUID()), existence: true,
                        values: ["title": .string("Intruder"), "quantity": .integer(1)])
                ])
            try Data(intruder.encoded()).write(to: stranger.appendingPathComponent("000000000002.log"))
            try Data("not a log".utf8).write(to: stranger.appendingPathComponent("000000000003.log"))
            try Data().write(to: stranger.appendingPathComponent("notes.txt"))

            let b = try StoreFixture(in: folder, name: "b", content: content)
            let reader = b.context()
            let titles = try reader.all(Item.self, sortedBy: \.title).map(\.title)
            #expect(titles == ["Bread", "Milk"], "A's logs imported as the store was added; the stranger's refused")
            #expect(try b.coordinator.importUbiquitousContent().isEmpty, "an import finds nothing new a second time")
        }
    }

    @Test("a large import commits and posts in batches as it goes, together naming every change once")
    func largeImportInBatches() throws {
        try withTemporaryFolder { folder in
            let content = folder.appendingPathComponent("TransactionLogs", isDirectory: true)
            let a = try StoreFixture(in: folder, name: "a", content: content)
            let onA = a.context()
            var saved: [[ManagedObjectID]] = []
            for save in 0..<6 {
                let items = (0..<3).map { index in
                    let item = Item(context: onA)
                    item.title = "Item \(save).\(index)"
                    return item
                }
                try onA.saveWritingLogs()
                saved.append(items.map(\.objectID))
            }
            let first = try onA.existingObject(with: saved[0][0])
            onA.delete(first)
            try onA.saveWritingLogs()

            // B imports A's seven logs as its store is added, at most five changed objects to a transaction.
            let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModel.model, importBatchLimit: 5)
            let posted = Mutex<[ObjectIDChanges]>([])
            let observer = NotificationCenter.default.addObserver(
                forName: PersistentStoreCoordinator.didImportUbiquitousContentChangesNotification, object: coordinator,
                queue: nil
            ) { notification in
                let changes = ObjectIDChanges(userInfo: notification.userInfo)
                posted.withLock { $0.append(changes) }
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            try coordinator.addPersistentStore(
                type: .sqlite, configuration: nil, at: folder.appendingPathComponent("b.sqlite"),
                options: [
                    NSPersistentStoreUbiquitousContentNameKey: "Grocery",
                    NSPersistentStoreUbiquitousContentURLKey: content,
                ])

            let batches = posted.withLock { $0 }
            #expect(
                batches.map(\.inserted) == [
                    Set(saved[0] + saved[1]), Set(saved[2] + saved[3]), Set(saved[4] + saved[5]), [],
                ], "two logs to a batch, each posted as it committed")
            #expect(batches.last?.deleted == [saved[0][0]], "the delete comes in the last batch")
            let onB = ManagedObjectContext(concurrencyType: .privateQueue)
            onB.persistentStoreCoordinator = coordinator
            #expect(try onB.count(for: FetchRequest<Item>()) == 17)
            #expect(try coordinator.importUbiquitousContent().isEmpty, "nothing is left for another import")
        }
    }

    @Test("a log of a newer model is kept by the import and applied once the app upgrades, even if its file is gone")
    func newerModelAppliedAfterUpgrade() throws {
        try withTemporaryFolder { folder in
            let content = folder.appendingPathComponent("TransactionLogs", isDirectory: true)
            let device = UUID()
            let tea = ManagedObjectID(entityName: "Item", uuid: UUID())
            let log = TransactionLog(
                device: device, sequence: 1, time: 1 << 20, modelVersion: 2,
                changes: [ObjectChange(id: tea, existence: true, values: ["title": .string("Tea")])])
            let logs = content.appendingPathComponent("Grocery/\(device.uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
            let file = logs.appendingPathComponent("000000000001.log")
            try Data(log.encoded()).write(to: file)

            let old = try StoreFixture(in: folder, name: "b", content: content)
            let before = old.context()
            #expect(throws: RecordStoreError.self) { try before.existingObject(with: tea) }
            try FileManager.default.removeItem(at: file)

            let upgraded = ManagedObjectModel(version: 2, entities: TestModel.model.entities)
            let new = try StoreFixture(in: folder, name: "b", content: content, model: upgraded)
            let after = new.context()
            let item = try #require(try after.existingObject(with: tea) as? Item)
            #expect(item.title == "Tea")
        }
    }

    @Test("saves of four contexts at once each leave one whole log in sequence, all written once the store is removed")
    func concurrentSavesWriteEveryLog() async throws {
        try await withTemporaryFolder { folder in
            let content = folder.appendingPathComponent("TransactionLogs", isDirectory: true)
            let a = try StoreFixture(in: folder, name: "a", content: content)
            let (writers, saves) = (4, 25)
            // Saves return before their logs are written, on a thread of the store's: four contexts saving at once
            // ask for them out of order and faster than files are made.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    let context = a.context()
                    group.addTask {
                        try await context.perform {
                            for save in 0..<saves {
                                let item = Item(context: context)
                                item.title = "\(writer)-\(save)"
                                try context.save()
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            // Removing the store waits for its logs and flushes them.
            try a.coordinator.remove(a.store)
            let logs = content.appendingPathComponent("Grocery/\(a.store.identifier)", isDirectory: true)
            let files = try FileManager.default.contentsOfDirectory(atPath: logs.path)
            #expect(files.allSatisfy { $0.hasSuffix(".log") || $0 == "progress" }, "no temporary file left: \(files)")
            let names = files.filter { $0.hasSuffix(".log") }.sorted()
            #expect(
                names == (1...UInt64(writers * saves)).map(RecordDatabase.logFileName), "one log a save")
            var titles: Set<String> = []
            for (index, name) in names.enumerated() {
                let log = try TransactionLog(decoding: Array(try Data(contentsOf: logs.appendingPathComponent(name))))
                #expect(log.sequence == UInt64(index + 1) && log.device.uuidString == a.store.identifier)
                for change in log.changes {
                    if case .string(let title)? = change.values["title"] { titles.insert(title) }
                }
            }
            #expect(titles.count == writers * saves, "every save's item is in its log")

            let b = try StoreFixture(in: folder, name: "b", content: content)
            #expect(try b.context().count(for: FetchRequest<Item>()) == writers * saves)
        }
    }
}
