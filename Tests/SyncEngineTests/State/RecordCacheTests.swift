import Foundation
import GRDB
import Synchronization
import Testing
import UbiquityProtocol

@testable import SyncEngine

@Suite("State database: the records it hands out are the ones it holds")
struct RecordCacheTests {
    private static func record(_ id: ItemID, size: Int64, path: String = "Documents/a.txt") -> StoredItem {
        StoredItem(ItemObservation(id: id, remote: RemoteView(path: try! ItemPath(path), kind: .file, size: size)))
    }

    private static func temporaryDatabase() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-state-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.appendingPathComponent("state.sqlite")
    }

    @Test("readers running beside a writer never see a record older than one they saw, nor one the file lacks")
    func readersBesideAWriter() async throws {
        let url = try Self.temporaryDatabase()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = try LocalStateStore(url: url)
        let id = ItemID()
        let other = ItemID()
        try store.write([
            RecordWrite(Self.record(id, size: 0), inStep: false),
            RecordWrite(Self.record(other, size: 0, path: "Documents/b.txt"), inStep: false),
        ])
        // A bounded amount of work on threads of their own: the readers do not spin, and the test's task waits
        // without holding one of Swift concurrency's few threads (other suites run beside this one).
        let writes: Int64 = 60
        let reads = 200
        let regressions = Mutex<[String]>([])
        let group = DispatchGroup()
        for reader in 0..<2 {
            group.enter()
            Thread {
                defer { group.leave() }
                var seen: Int64 = 0
                for _ in 0..<reads {
                    // One reader asks for the item alone, the other reads it among every pending record.
                    let found: StoredItem?
                    do {
                        found =
                            reader == 0
                            ? try store.record(id) : try store.recordsNotInStep().first { $0.id == id }
                    } catch {
                        regressions.withLock { $0.append("read failed: \(error)") }
                        return
                    }
                    let size = found?.observation.remote?.size ?? -1
                    if size < seen { regressions.withLock { $0.append("reader \(reader) saw \(size) after \(seen)") } }
                    seen = max(seen, size)
                }
            }.start()
        }
        group.enter()
        Thread {
            defer { group.leave() }
            do {
                for size in 1...writes {
                    // The other item's record is replaced too, so reads of the pending records decode as writes
                    // commit.
                    try store.write([
                        RecordWrite(Self.record(id, size: size), inStep: false),
                        RecordWrite(Self.record(other, size: size, path: "Documents/b.txt"), inStep: false),
                    ])
                }
            } catch {
                regressions.withLock { $0.append("write failed: \(error)") }
            }
        }.start()
        await withCheckedContinuation { continuation in
            group.notify(queue: .global()) { continuation.resume() }
        }
        #expect(regressions.withLock { $0 }.isEmpty, "\(regressions.withLock { $0.prefix(5) })")
        #expect(try store.record(id)?.observation.remote?.size == writes)
        // A store opened afresh on the same file (nothing cached) agrees with every read of the first.
        let reopened = try LocalStateStore(url: url)
        #expect(try reopened.record(id) == store.record(id))
        #expect(try Set(reopened.recordsNotInStep()) == Set(store.recordsNotInStep()))
    }

    @Test("a removal, a write refused by its condition and a queued version change read back as the file holds them")
    func writesOfEveryKindReadBack() throws {
        let url = try Self.temporaryDatabase()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = try LocalStateStore(url: url)
        let id = ItemID()
        let first = Self.record(id, size: 1)
        try store.write([RecordWrite(first, inStep: false)])
        #expect(try store.record(id) == first)

        // Conditioned on a record that is not the stored one: nothing changes, in the cache either.
        let applied = try store.write([RecordWrite(Self.record(id, size: 2), inStep: false, if: .unchanged(nil))])
        #expect(applied.isEmpty)
        #expect(try store.record(id) == first)

        // A version change made on this device writes the item's record in a transaction of its own.
        var withVersion = first
        let version = VersionID()
        withVersion.observation.remote?.version = version
        withVersion.hasUnresolvedConflicts = true
        try store.write([RecordWrite(withVersion, inStep: false)])
        let conflict = VersionRecord(
            id: VersionID(), itemID: id, manifest: .file([]),
            contentHash: try ChunkHash(String(repeating: "0", count: 64)),
            modificationDate: Date(timeIntervalSince1970: 1), savingDevice: SavingDevice(id: DeviceID(), name: "other"),
            basedOn: version, isConflict: true)
        try store.setOtherVersions([conflict], of: id)
        try store.changeVersionsLocally(ofItemAt: try ItemPath("Documents/a.txt")) { _ in [.markResolved(conflict.id)] }
        #expect(try store.record(id)?.hasUnresolvedConflicts == false)
        #expect(try store.record(id) == LocalStateStore(url: url).record(id))

        try store.write([RecordWrite(removing: id)])
        #expect(try store.record(id) == nil)
        #expect(try store.records().isEmpty)
    }

    @Test("while a write is under way its rows may be committed ahead of the cache: no read answers from the cache")
    func readsBesideAnUnfinishedWrite() throws {
        let cache = RecordCache()
        let id = ItemID()
        try cache.write { ((), [(id, Self.record(id, size: 37))]) }
        let before = try #require(cache.readGeneration)
        #expect(cache.records([id], readAt: before)[id]?.observation.remote?.size == 37)

        try cache.write {
            // The write's transaction has committed 38; a reader whose snapshot holds it must not be handed 37.
            #expect(cache.readGeneration == nil)
            #expect(cache.record(id) == nil)
            #expect(cache.records([id], readAt: before).isEmpty)
            cache.keep([Self.record(id, size: 37)], readAt: before)
            #expect(cache.recordWhileWriting(id)?.observation.remote?.size == 37)
            return ((), [(id, Self.record(id, size: 38))])
        }
        // A read that began before the write neither answers from the cache nor keeps what it decoded.
        #expect(cache.records([id], readAt: before).isEmpty)
        cache.keep([Self.record(id, size: 37)], readAt: before)
        #expect(cache.record(id)?.observation.remote?.size == 38)

        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try cache.write { () throws -> ((), [(ItemID, StoredItem?)]) in throw Refused() }
        }
        // A write that failed may have committed anything: nothing cached stands.
        #expect(cache.record(id) == nil)
        #expect(cache.readGeneration != nil)
    }

    @Test("groups of writes in one transaction each apply as if alone, after the groups before them")
    func groupsOfWritesInOneTransaction() throws {
        let url = try Self.temporaryDatabase()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = try LocalStateStore(url: url)
        func local(_ path: String, inode: UInt64) throws -> LocalView {
            LocalView(
                path: try ItemPath(path), kind: .file,
                identity: LocalFileIdentity(device: 1, inode: inode, size: 1, modified: 1, changed: 1))
        }
        let (moved, other, new) = (ItemID(), ItemID(), ItemID())
        let before = StoredItem(ItemObservation(id: moved, local: try local("Documents/a.txt", inode: 1)))
        let untouched = Self.record(other, size: 0, path: "Documents/b.txt")
        try store.write([RecordWrite(before, inStep: false), RecordWrite(untouched, inStep: false)])
        #expect(try store.record(moved) == before)  // cached, as the transaction below begins

        let after = StoredItem(ItemObservation(id: moved, local: try local("Documents/c.txt", inode: 1)))
        let outcomes = try store.write(groups: [
            // The item's local copy moves from a.txt to c.txt.
            [RecordWrite(after, inStep: false)],
            // Written over what it was before the move: the first group changed it, so this one does not apply.
            [RecordWrite(Self.record(moved, size: 9), inStep: false, if: .unchanged(before))],
            // A new file at a.txt, which the first group's write no longer claims.
            [
                RecordWrite(
                    StoredItem(ItemObservation(id: new, local: try local("Documents/a.txt", inode: 2))), inStep: false,
                    if: .pathUnclaimed)
            ],
            // At c.txt, which the first group's write claims now: not applied.
            [
                RecordWrite(
                    StoredItem(ItemObservation(id: ItemID(), local: try local("Documents/c.txt", inode: 3))),
                    inStep: false, if: .pathUnclaimed)
            ],
            [RecordWrite(removing: other, if: .unchanged(untouched))],
        ])
        let applied = try outcomes.map { try $0.get().map(\.write.id) }
        #expect(applied == [[moved], [], [new], [], [other]])
        #expect(try outcomes[0].get().first?.before == before)
        #expect(try store.record(moved) == after)
        #expect(try store.record(new)?.observation.local?.path.string == "Documents/a.txt")
        #expect(try store.record(other) == nil)
        // What a store opened afresh reads from the file agrees with what the cache answered.
        let reopened = try LocalStateStore(url: url)
        #expect(try reopened.record(moved) == after)
        #expect(try reopened.record(new) != nil)
        #expect(try reopened.records(atOrBelow: ["Documents"]).count == 2)
    }

    @Test("a group of writes that fails in a shared transaction fails alone: the groups around it are written")
    func failingGroupFailsAlone() throws {
        let url = try Self.temporaryDatabase()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = try LocalStateStore(url: url)
        // The database refuses any record at one path, as a full disk or a corrupt page would refuse a write.
        try DatabaseQueue(path: url.path).write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER refuse BEFORE INSERT ON item_record WHEN NEW.path = 'Documents/refused.txt'
                    BEGIN SELECT RAISE(ABORT, 'refused'); END
                    """)
        }
        let (first, refusedFirst, refused, last) = (ItemID(), ItemID(), ItemID(), ItemID())
        let outcomes = try store.write(groups: [
            [RecordWrite(Self.record(first, size: 1, path: "Documents/first.txt"), inStep: false)],
            [
                // Applied before its group's refused write, and taken back with it.
                RecordWrite(Self.record(refusedFirst, size: 2, path: "Documents/with-refused.txt"), inStep: false),
                RecordWrite(Self.record(refused, size: 2, path: "Documents/refused.txt"), inStep: false),
            ],
            [RecordWrite(Self.record(last, size: 3, path: "Documents/last.txt"), inStep: false)],
        ])
        #expect(outcomes.count == 3)
        #expect(try outcomes[0].get().map(\.write.id) == [first])
        #expect(throws: (any Error).self) { try outcomes[1].get() }
        #expect(try outcomes[2].get().map(\.write.id) == [last])
        #expect(try store.record(first) != nil)
        #expect(try store.record(refusedFirst) == nil)
        #expect(try store.record(refused) == nil)
        #expect(try store.record(last) != nil)
        let reopened = try LocalStateStore(url: url)
        #expect(try Set(reopened.records(atOrBelow: ["Documents"]).map(\.id)) == [first, last])
        // Alone, a refused group is the transaction's failure, as a single write always was.
        #expect(throws: (any Error).self) {
            try store.write([RecordWrite(Self.record(ItemID(), size: 4, path: "Documents/refused.txt"), inStep: false)])
        }
    }
}
