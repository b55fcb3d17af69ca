import DocumentKit
import Foundation
import GRDB
import Testing
import UbiquityProtocol

@testable import SyncEngine

/// The state database is the engine's memory of what it agreed on with the service, not the only copy of anything:
/// when it is damaged (a failing disk, a file overwritten), the engine moves it aside and starts afresh, and what is
/// on disk here and on the service comes through whole.
@Suite("A damaged state database")
struct DamagedStateTests {
    @Test(
        "Emptied where it is, a copy kept; the engine starts afresh, matches its files to the service's items, takes old copies for old versions, loses no edit, doubles nothing"
    )
    func startsAfresh() async throws {
        try await DevicePair.run { pair in
            let (laptop, desktop) = (pair.laptop, pair.desktop)
            let paths = try ["a", "b", "c"].map { try ItemPath("Documents/Notes/\($0).txt") }
            let (a, b, c) = (paths[0], paths[1], paths[2])
            try FileManager.default.createDirectory(
                at: laptop.layout.url(of: a).deletingLastPathComponent(), withIntermediateDirectories: true)
            for path in paths { try pair.write(Data(path.name.utf8), to: path, on: laptop) }
            try await laptop.syncOnce()
            try await desktop.syncOnce()

            // The laptop's engine stops. Meanwhile its user edits a, the desktop's edits b, and the laptop's state
            // database is overwritten.
            laptop.releaseLock()
            try laptop.state.pool.close()
            try pair.write(Data("a, edited on the laptop".utf8), to: a, on: laptop)
            try pair.write(Data("b, edited on the desktop".utf8), to: b, on: desktop)
            try await desktop.syncOnce()
            // Its write-ahead log goes too, which would otherwise hold the latest copy of most pages.
            let database = laptop.layout.stateDatabase
            try Data(repeating: 0x5A, count: 64 * 1024).write(to: database)
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database.path + suffix) }
            let file = try #require(try FileIdentity.lookUp(path: database.path))

            let restarted = try ContainerSync(
                layout: laptop.layout, client: laptop.client, device: laptop.device,
                configuration: laptop.configuration)
            defer { restarted.releaseLock() }
            // Emptied where it is: another process's connection to it sees the empty database.
            #expect(try FileIdentity.lookUp(path: database.path)?.inode == file.inode)
            let aside = try FileManager.default.contentsOfDirectory(atPath: laptop.layout.privateFolder.path)
                .filter { $0.hasPrefix("state.sqlite.damaged-") }
            #expect(!aside.isEmpty, "the damaged database is kept for a look")
            // A round, and the next for the copies it stepped aside; the desktop hears of each.
            for _ in 0..<2 {
                try await restarted.syncOnce()
                try await desktop.syncOnce()
            }

            // A file the same as the service's item is that item (c); one that is an earlier version of it is that
            // version, and the service's newer one comes down over it (b); one that is neither, an edit made here,
            // steps aside as a conflicted copy and goes up as an item of its own, and the service's content takes
            // its path (a). Nothing is lost, nothing is doubled.
            let asideA = try ItemPath("Documents/Notes/a (conflicted copy).txt")
            for device in [restarted, desktop] {
                let files = try await device.items().filter { $0.kind == .file }
                #expect(files.count == 4 && Set(files.map(\.path)) == [a, asideA, b, c], "\(files.map(\.path))")
                #expect(try await device.items().allSatisfy { $0.uploadError == nil && $0.downloadError == nil })
            }
            #expect(pair.documents(on: laptop) == pair.documents(on: desktop))
            for (path, content) in [
                (asideA, "a, edited on the laptop"), (a, "a.txt"), (b, "b, edited on the desktop"), (c, "c.txt"),
            ] {
                #expect(pair.read(path, on: laptop) == Data(content.utf8), "\(path) on the laptop")
                #expect(pair.read(path, on: desktop) == Data(content.utf8), "\(path) on the desktop")
            }
        }
    }

    @Test(
        "A corrupt page deeper in than opening reads: the round that meets it empties the database in place and runs again afresh; nothing is lost"
    )
    func corruptPageFoundByRound() async throws {
        try await DevicePair.run { pair in
            let (laptop, desktop) = (pair.laptop, pair.desktop)
            let paths = try ["a", "b", "c"].map { try ItemPath("Documents/Notes/\($0).txt") }
            let (a, b) = (paths[0], paths[1])
            try FileManager.default.createDirectory(
                at: laptop.layout.url(of: a).deletingLastPathComponent(), withIntermediateDirectories: true)
            for path in paths { try pair.write(Data(path.name.utf8), to: path, on: laptop) }
            try await laptop.syncOnce()
            try await desktop.syncOnce()

            // The laptop's engine stops; its user edits a, the desktop's edits b, and the page holding the laptop's
            // item records is zeroed (its log checkpointed into the file first), leaving the pages opening reads.
            // A key-value write made meanwhile waits in the database, on pages the damage spares.
            laptop.releaseLock()
            try await laptop.setKeyValues(["theme": .string("dark")])
            try pair.write(Data("a, edited on the laptop".utf8), to: a, on: laptop)
            try pair.write(Data("b, edited on the desktop".utf8), to: b, on: desktop)
            try await desktop.syncOnce()
            let database = laptop.layout.stateDatabase
            let (pageSize, root) = try await DatabaseQueue(path: database.path).writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                return (
                    try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0,
                    try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = 'item_record'") ?? 0
                )
            }
            #expect(root > 1)
            let file = try FileHandle(forWritingTo: database)
            try file.seek(toOffset: UInt64((root - 1) * pageSize))
            try file.write(contentsOf: Data(repeating: 0, count: pageSize))
            try file.close()

            let restarted = try ContainerSync(
                layout: laptop.layout, client: laptop.client, device: laptop.device,
                configuration: laptop.configuration)
            defer { restarted.releaseLock() }
            #expect(throws: DatabaseError.self, "opening did not read the page") { try restarted.state.items() }
            // A round (which meets the page, and runs again afresh), and the next for the copy it stepped aside.
            for _ in 0..<2 {
                try await restarted.syncOnce()
                try await desktop.syncOnce()
            }

            let aside = try FileManager.default.contentsOfDirectory(atPath: laptop.layout.privateFolder.path)
                .filter { $0.hasPrefix("state.sqlite.damaged-") }
            #expect(!aside.isEmpty, "a copy of the damaged database is kept for a look")
            // As after a database moved aside at opening: the same file is the item, the old copy is that version,
            // the edit made here steps aside and goes up; the engine knows every item again.
            let asideA = try ItemPath("Documents/Notes/a (conflicted copy).txt")
            for device in [restarted, desktop] {
                let files = try await device.items().filter { $0.kind == .file }
                #expect(Set(files.map(\.path)) == Set(paths + [asideA]), "\(files.map(\.path))")
            }
            #expect(pair.documents(on: laptop) == pair.documents(on: desktop))
            #expect(pair.read(asideA, on: desktop) == Data("a, edited on the laptop".utf8))
            #expect(pair.read(b, on: laptop) == Data("b, edited on the desktop".utf8))
            #expect(try await desktop.keyValues()["theme"] == .string("dark"), "the unsent write was lost")
        }
    }

    @Test("Emptying the database keeps what was made here and not yet sent: key-value writes, queued operations")
    func unsentWorkKept() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-state-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("state.sqlite")
        let store = try LocalStateStore(url: url)
        let (id, version) = (ItemID(), VersionID())
        let path = try ItemPath("Documents/a.txt")
        try store.write([
            RecordWrite(StoredItem(ItemObservation(id: id, remote: RemoteView(path: path, kind: .file))), inStep: false)
        ])
        try store.writeKeyValues(
            ["theme": .string("dark"), "size": .integer(12)], removing: ["old"], at: Date(timeIntervalSince1970: 7),
            limits: KeyValueLimits())
        try store.settleKeyValueWrites([
            KeyValueWrite(key: "size", value: .integer(12), timestamp: Date(timeIntervalSince1970: 7))
        ])
        try store.enqueue([.markResolved(version), .remove(version)], of: id)
        // Damage that still reads: values not of their columns' kinds are left out, not trusted (nor crashed on).
        try store.pool.write { db in
            try db.execute(sql: "INSERT INTO key_value VALUES ('mangled', 'x', 'not a time', 1)")
            try db.execute(sql: "INSERT INTO outbox (item_id, operation) VALUES ('x', x'00ff')")
        }

        // Reset twice: only the latest copy of the damaged file is kept.
        try store.resetToEmpty(keepingCopyAt: folder.appendingPathComponent("state.sqlite.damaged-1"))
        #expect(try store.queuedOperationCount() == 2, "the mangled operation was kept")
        try store.resetToEmpty(keepingCopyAt: folder.appendingPathComponent("state.sqlite.damaged-2"))
        #expect(try store.items().isEmpty)
        #expect(try store.keyValues() == ["theme": .string("dark")], "a write the service has is learnt from it again")
        let pending = try store.pendingKeyValueWrites()
        #expect(
            pending.map(\.key) == ["old", "theme"] && pending.allSatisfy { $0.timestamp.timeIntervalSince1970 == 7 })
        #expect(try store.queuedOperationCount() == 2)
        let first = try #require(try store.nextQueuedOperation())
        #expect(first.item == id && first.operation == .markResolved(version))
        let copies = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasPrefix("state.sqlite.damaged-") }
        #expect(copies.contains("state.sqlite.damaged-2"))
        #expect(copies.allSatisfy { $0.hasPrefix("state.sqlite.damaged-2") }, "\(copies)")
    }
}
