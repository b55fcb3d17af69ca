import Foundation
import Testing

@testable import RecordStore

/// Baselines: a device writes one after a number of saves; its logs are removed only once every device known to the
/// content holds them; a new device starts from the baselines, and one offline through a compaction catches up.
@Suite("Record store baselines")
struct BaselineTests {
    @Test("a baseline is written; logs are removed only once every device holds them; a new device starts from it")
    func compactionAndBootstrap() throws {
        try withTemporaryFolder { folder in
            let content = folder.appendingPathComponent("TransactionLogs", isDirectory: true)
            let a = try StoreFixture(in: folder, name: "a", content: content, baselineThreshold: 5)
            // B has been here (its folder and progress are in the content) but is away while A saves.
            let away = try StoreFixture(in: folder, name: "b", content: content, baselineThreshold: 5)
            try away.coordinator.importUbiquitousContent()
            // Removed, it imports nothing more: an import it had scheduled would otherwise hold A's saves early.
            let (awayCoordinator, awayStore) = (away.coordinator, away.store)
            try awayCoordinator.remove(awayStore)
            #expect(awayCoordinator.persistentStores.isEmpty)
            do {
                try awayCoordinator.remove(awayStore)
                Issue.record("a store removed already was removed again")
            } catch let error as RecordStoreError {
                #expect(error.code == .storeNotAdded)
            }
            let onA = a.context()
            var ids: [ManagedObjectID] = []
            try withExtendedLifetime(onA) {
                let family = Tag(context: onA)
                family.name = "Family"
                for index in 1...12 {
                    let item = Item(context: onA)
                    item.title = "Item \(index)"
                    if index.isMultiple(of: 3) { item.tags = [family] }
                    try onA.saveWritingLogs()
                    ids.append(item.objectID)
                }
                // A delete after the baseline and one before it: the new device must see both gone.
                onA.delete(try onA.existingObject(with: ids[1]))
                try onA.saveWritingLogs()
            }
            let aFolder = content.appendingPathComponent("Grocery/\(a.store.identifier)")
            // B is known to the content but holds none of A's saves: A keeps every log.
            #expect(try files(in: aFolder).filter { $0.hasSuffix(".log") }.count == 13)
            #expect(try files(in: aFolder).contains("base-000000000010.base"))

            let b = try StoreFixture(in: folder, name: "b", content: content, baselineThreshold: 5)  // B is back
            try a.coordinator.importUbiquitousContent()  // A reads B's progress and removes what its baseline holds
            #expect(
                try files(in: aFolder) == [
                    "000000000011.log", "000000000012.log", "000000000013.log",
                    "base-000000000010.base", "progress",
                ])

            // A stranger's unreadable baseline is skipped; the new device starts from A's baseline and later logs.
            let stranger = content.appendingPathComponent("Grocery/\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: stranger, withIntermediateDirectories: true)
            try Data("not a baseline".utf8).write(to: stranger.appendingPathComponent("base-000000000003.base"))
            let c = try StoreFixture(in: folder, name: "c", content: content, baselineThreshold: 5)
            let states = try [a, b, c].map { fixture in try fixture.store.database.read { try $0.replicaState() } }
            #expect(states[0] == states[1] && states[1] == states[2], "every device holds the same records and links")
            let onC = c.context()
            try withExtendedLifetime(onC) {
                let titles = try onC.all(Item.self, sortedBy: \.title).map(\.title)
                #expect(titles.count == 11 && !titles.contains("Item 2"))
                let family = try #require(try onC.all(Tag.self, sortedBy: \.name).first)
                #expect(Set(family.items.map(\.title)) == ["Item 3", "Item 6", "Item 9", "Item 12"])
            }
        }
    }

    @Test("a device offline through a compaction keeps what it lacks in the content, and catches up without loss")
    func offlineThroughACompaction() throws {
        try withTemporaryFolder { folder in
            let content = folder.appendingPathComponent("TransactionLogs", isDirectory: true)
            let a = try StoreFixture(in: folder, name: "a", content: content, baselineThreshold: 4)
            let aFolder = content.appendingPathComponent("Grocery/\(a.store.identifier)")
            var offline: StoreFixture? = try StoreFixture(in: folder, name: "d", content: content, baselineThreshold: 4)
            let onA = a.context()
            try withExtendedLifetime(onA) {
                let first = Item(context: onA)
                first.title = "Before"
                try onA.saveWritingLogs()
            }
            let away = try #require(offline)
            try away.coordinator.importUbiquitousContent()
            // The device goes away, its folder and progress stay in the content. Removed, its store imports nothing
            // more; dropping the coordinator alone would leave an import it had scheduled free to run and claim A's
            // next logs.
            try away.coordinator.remove(away.store)
            offline = nil

            try withExtendedLifetime(onA) {
                for index in 1...9 {
                    let item = Item(context: onA)
                    item.title = "While away \(index)"
                    try onA.saveWritingLogs()
                }
                let before = try #require(try onA.all(Item.self, sortedBy: \.title).first { $0.title == "Before" })
                before.note = "changed while away"
                try onA.saveWritingLogs()
            }
            try a.coordinator.importUbiquitousContent()
            let logs = try files(in: aFolder).filter { $0.hasSuffix(".log") }
            #expect(logs.count == 10, "only the log the away device holds may go: \(logs)")
            #expect(logs.first == "000000000002.log", "the first log, which the away device holds, went")

            let back = try StoreFixture(in: folder, name: "d", content: content, baselineThreshold: 4)
            let stateA = try a.store.database.read { try $0.replicaState() }
            let stateD = try back.store.database.read { try $0.replicaState() }
            #expect(stateA == stateD, "the device back holds everything, nothing lost")
            try a.coordinator.importUbiquitousContent()
            #expect(
                try files(in: aFolder).filter { $0.hasSuffix(".log") } == [
                    "000000000009.log", "000000000010.log", "000000000011.log",
                ])
        }
    }

    @Test("another device's oversized or garbled progress counts as holding nothing: the logs stay")
    func hostileProgressKeepsLogs() throws {
        try withTemporaryFolder { folder in
            let content = folder.appendingPathComponent("TransactionLogs", isDirectory: true)
            let a = try StoreFixture(in: folder, name: "a", content: content, baselineThreshold: 2)
            let grocery = content.appendingPathComponent("Grocery", isDirectory: true)
            // Two strangers: one claims in an oversized file to hold all of A's logs, one writes garbage.
            let claim = "\(a.store.identifier) 1000\n"
            for (index, text) in [
                claim + String(repeating: "x", count: Compaction.maximumProgressSize), "\u{0}garbage 12",
            ]
            .enumerated() {
                let stranger = grocery.appendingPathComponent(UUID().uuidString, isDirectory: true)
                try FileManager.default.createDirectory(at: stranger, withIntermediateDirectories: true)
                try Data(text.utf8).write(to: stranger.appendingPathComponent("progress"))
                #expect(Compaction.readProgress(stranger.appendingPathComponent("progress")).isEmpty, "file \(index)")
            }
            let context = a.context()
            try withExtendedLifetime(context) {
                for title in ["Milk", "Bread", "Eggs"] {
                    Item(context: context).title = title
                    try context.saveWritingLogs()
                }
            }
            let own = grocery.appendingPathComponent(a.store.identifier, isDirectory: true)
            let names = try files(in: own)
            #expect(names.contains("base-000000000002.base"), "a baseline was written")
            #expect(names.filter { $0.hasSuffix(".log") }.count == 3, "no log removed: \(names)")
        }
    }

    @Test("a baseline's bytes read back as the same baseline; altered bytes are refused")
    func baselineCoding() throws {
        try withTemporaryFolder { folder in
            let store = try StoreFixture(in: folder)
            let context = store.context()
            try withExtendedLifetime(context) {
                let tag = Tag(context: context)
                tag.name = "Family\u{0}with a NUL"
                for title in ["Milk", "Bread"] {
                    let item = Item(context: context)
                    item.title = title
                    item.note = title == "Milk" ? nil : "wholemeal"
                    item.tags = [tag]
                }
                try context.saveWritingLogs()
                context.delete(try #require(try context.all(Item.self, sortedBy: \.title).first))
                try context.saveWritingLogs()
            }
            let baseline = try store.store.database.read { try $0.baseline() }
            let bytes = baseline.encoded()
            #expect(try Baseline(decoding: bytes) == baseline)
            var altered = bytes
            altered[altered.count / 2] ^= 0x01
            #expect(throws: RecordStoreError.self) { try Baseline(decoding: altered) }
            #expect(throws: RecordStoreError.self) { try Baseline(decoding: Array(bytes.prefix(bytes.count - 1))) }
        }
    }
}

private func files(in folder: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }.sorted()
}
