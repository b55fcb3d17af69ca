import Foundation
import GRDB
import Testing

@testable import RecordStore

/// A save is on disk once it returns: its log may already be in the container, and other devices may apply it.
@Suite("Record store durability")
struct DurabilityTests {
    @Test("the store's writer flushes every commit (synchronous = FULL), as the saves and their logs rely on")
    func commitsAreFlushed() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder, content: folder.appendingPathComponent("content"))
            let level = try fixture.store.database.writer.writeWithoutTransaction { db in
                try Int.fetchOne(db, sql: "PRAGMA synchronous")
            }
            #expect(level == 2, "FULL is 2; the pool had left NORMAL (1) on its writer")
        }
    }

    @Test("logs are flushed together and kept in the outbox until then; logs a power loss took are written again")
    func logsFlushedTogether() throws {
        try withTemporaryFolder { folder in
            let content = folder.appendingPathComponent("content", isDirectory: true)
            // Flushed by their count alone, not by time, which a slow machine would make the test's to decide; no
            // baseline takes the place of the logs.
            let byCount: [String: any Sendable] = [PersistentStore.logFlushDelayOption: Duration?.none]
            var fixture = try StoreFixture(in: folder, content: content, baselineThreshold: 1 << 20, options: byCount)
            let context = fixture.context()
            let item = Item(context: context)
            func save(_ count: Int) throws {
                for _ in 0..<count {
                    item.quantity += 1
                    try context.saveWritingLogs()
                }
            }
            func outbox(_ fixture: StoreFixture) throws -> [Int64] {
                try fixture.store.database.read { try Int64.fetchAll($0.db, sql: "SELECT sequence FROM rs_outbox") }
            }
            let flushed = RecordDatabase.logsFlushedTogether
            try save(3)
            #expect(try outbox(fixture) == [1, 2, 3], "written to the container, not flushed yet")
            try save(flushed)
            let newest = Array(Int64(flushed + 1)...Int64(flushed + 3))
            #expect(try outbox(fixture) == newest, "the flushed logs went with the saves after the flush")
            try save(2)
            let logs = try #require(fixture.store.logFolder)
            let unflushed = (flushed + 1)...(flushed + 5)
            let urls = unflushed.map { logs.appendingPathComponent(RecordDatabase.logFileName(UInt64($0))) }
            let bytes = try urls.map { try Data(contentsOf: $0) }

            // The machine loses power before the newest logs are flushed: their files are gone.
            try fixture.coordinator.remove(fixture.store)
            for url in urls { try FileManager.default.removeItem(at: url) }
            fixture = try StoreFixture(in: folder, content: content, baselineThreshold: 1 << 20, options: byCount)
            #expect(try urls.map { try Data(contentsOf: $0) } == bytes, "written again whole from the outbox")
            let files = try FileManager.default.contentsOfDirectory(atPath: logs.path).filter { $0.hasSuffix(".log") }
            #expect(files.count == flushed + 5)
        }
    }

    @Test("logs are flushed once the saves pause, and the outbox then forgets them")
    func logsFlushedWhenSavesPause() throws {
        try withTemporaryFolder { folder in
            // A pause of no time: every save's log is flushed before it is reported written.
            let fixture = try StoreFixture(
                in: folder, content: folder.appendingPathComponent("content", isDirectory: true),
                options: [PersistentStore.logFlushDelayOption: Duration.zero])
            let context = fixture.context()
            let item = Item(context: context)
            for _ in 0..<3 {
                item.quantity += 1
                try context.saveWritingLogs()
            }
            #expect(fixture.store.database.durableSequence == 3, "three logs, far fewer than flushed together")
            item.quantity += 1
            try context.saveWritingLogs()
            let outbox = try fixture.store.database.read {
                try Int64.fetchAll($0.db, sql: "SELECT sequence FROM rs_outbox")
            }
            #expect(outbox == [4], "the flushed logs went with the next save, which keeps its own until a later one")
            #expect(fixture.store.database.durableSequence == 4)
        }
    }
}
