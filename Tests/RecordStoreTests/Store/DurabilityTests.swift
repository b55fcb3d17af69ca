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
}
