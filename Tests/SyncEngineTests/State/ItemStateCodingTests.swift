import Foundation
import GRDB
import Testing
import UbiquityProtocol

@testable import SyncEngine

/// The binary form the state database keeps items in as apps see them, and the snapshot an app reads at open.
@Suite("Items in the state database: their binary forms, their migration, and an app's snapshot")
struct ItemStateCodingTests {
    @Test("Every field of an item comes back as written, and bytes cut short or trailing are refused, typed")
    func roundTripAndRefusal() throws {
        let seed = SeededRandom.runSeed()
        var random = SeededRandom(seed: seed)
        for _ in 0..<500 {
            let item = try Self.randomItem(&random)
            let bytes = item.stateBytes
            #expect(try LocalItem(stateBytes: bytes) == item, "seed \(seed)")
            // Cut anywhere, or followed by more, the bytes are refused with an error, never read as another item.
            let cut = Int.random(in: 0..<bytes.count, using: &random)
            #expect(throws: ProtocolError.self, "seed \(seed)") { try LocalItem(stateBytes: bytes.prefix(cut)) }
            #expect(throws: ProtocolError.self, "seed \(seed)") { try LocalItem(stateBytes: bytes + [0]) }
        }
        var unknown = try Self.randomItem(&random).stateBytes
        unknown[unknown.startIndex] = 99
        #expect(throws: ProtocolError.self) { try LocalItem(stateBytes: unknown) }
        // A hostile path in the bytes is refused as the path's own error.
        let hostile = LocalItem(id: ItemID(), path: try ItemPath("Documents/x"), kind: .file)
        var bytes = [UInt8](hostile.stateBytes)
        let at = 1 + 16 + 1  // the format, the id, the path's length
        #expect(bytes[at] == UInt8(ascii: "D"))
        bytes.replaceSubrange(at..<at + 3, with: Array("../".utf8))
        #expect(throws: ProtocolError.self) { try LocalItem(stateBytes: bytes) }
    }

    @Test("Every observation comes back as written; cut short, trailing or with an unknown format it is refused")
    func observationRoundTripAndRefusal() throws {
        let seed = SeededRandom.runSeed()
        var random = SeededRandom(seed: seed)
        for _ in 0..<500 {
            let observation = try Self.randomObservation(&random)
            let bytes = observation.stateBytes
            #expect(try ItemObservation(stateBytes: bytes) == observation, "seed \(seed)")
            let cut = Int.random(in: 0..<bytes.count, using: &random)
            #expect(throws: ProtocolError.self, "seed \(seed)") { try ItemObservation(stateBytes: bytes.prefix(cut)) }
            #expect(throws: ProtocolError.self, "seed \(seed)") { try ItemObservation(stateBytes: bytes + [0]) }
            var unknown = bytes
            unknown[unknown.startIndex] = 2
            #expect(throws: ProtocolError.self, "seed \(seed)") { try ItemObservation(stateBytes: unknown) }
        }
    }

    @Test(
        "A state database an older engine wrote, its items as JSON and no inodes, reads the same after the migrations")
    func migratesJSONItems() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-items-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let url = root.appendingPathComponent("state.sqlite")
        var random = SeededRandom(seed: SeededRandom.runSeed())
        let items = try (0..<50).map { number in
            var item = try Self.randomItem(&random)
            item.path = try ItemPath("Documents/\(number).txt")
            return item
        }
        let written: [LocalItem]
        do {
            let store = try LocalStateStore(url: url)
            try store.update(saving: items)
            written = try store.items()
        }
        let observations = try LocalStateStore(url: url).records().map(\.observation)
        // As an engine before the binary forms left it: each item and its observations as JSON, the migrations not
        // yet run.
        do {
            let queue = try DatabaseQueue(path: url.path)
            try queue.write { db in
                func json(_ value: some Encodable) throws -> String {
                    String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
                }
                for item in written {
                    try db.execute(
                        sql: "UPDATE item_record SET record = ? WHERE id = ?",
                        arguments: [try json(item), item.id.string])
                }
                for observation in observations {
                    try db.execute(
                        sql: "UPDATE item_record SET observation = ? WHERE id = ?",
                        arguments: [try json(observation), observation.id.string])
                }
                try db.execute(
                    sql: """
                        DROP INDEX item_record_file_inode;
                        ALTER TABLE item_record DROP COLUMN file_inode;
                        DELETE FROM grdb_migrations
                            WHERE identifier IN ('v6-binary-items', 'v7-binary-observations', 'v8-file-inode');
                        """)
            }
        }
        let reopened = try LocalStateStore(url: url)
        // The inodes of the items' files are indexed again: a file found elsewhere with one may be that item moved,
        // as may a file where the service has an item; a file of neither is new.
        let inodes = Set(observations.compactMap { ($0.local?.identity ?? $0.synced?.identity)?.inode })
        let remotePaths = observations.compactMap { $0.remote.flatMap { $0.isDeleted ? nil : $0.path } }
        #expect(!inodes.isEmpty && !remotePaths.isEmpty)
        var fresh: UInt64 = 1
        func entry(_ path: String, inode: UInt64? = nil) throws -> ScannedItem {
            while inodes.contains(fresh) { fresh += 1 }
            defer { fresh += 1 }
            return ScannedItem(
                path: try ItemPath(path), kind: .file,
                identity: LocalFileIdentity(device: 1, inode: inode ?? fresh, size: 1, modified: 1, changed: 1))
        }
        let moved = try inodes.enumerated().map { try entry("Moved/\($0.offset)", inode: $0.element) }
        let madeBothSides = try remotePaths.map { try entry($0.string) }
        let new = try (0..<20).map { try entry("New/\($0)") }
        let atAnItem = try observations.map { try entry(StoredItem($0).path.string) }
        #expect(try reopened.claimedByNone(moved + madeBothSides + atAnItem + new) == new.map(\.path))
        #expect(try reopened.items() == written)
        #expect(Set(try reopened.records().map(\.observation)) == Set(observations))
        let texts = try DatabaseQueue(path: url.path).read { db in
            try Int.fetchOne(
                db,
                sql: "SELECT COUNT(*) FROM item_record WHERE typeof(record) = 'text' OR typeof(observation) = 'text'")
        }
        #expect(texts == 0, "every item converted")
    }

    @Test("An app's snapshot holds every item the engine's own reads do")
    func snapshotMatchesItems() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-items-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let store = try LocalStateStore(url: root.appendingPathComponent("state.sqlite"))
        var random = SeededRandom(seed: SeededRandom.runSeed())
        try store.update(
            saving: try (0..<300).map { number in
                var item = try Self.randomItem(&random)
                item.path = try ItemPath("Documents/\(number % 7)/\(number).bin")
                return item
            })
        let snapshot = try await store.snapshotItems()
        #expect(snapshot.count == 300)
        #expect(Set(snapshot) == Set(try store.items()))
    }

    /// Observations with each view and optional field present or not at random.
    static func randomObservation(_ random: inout SeededRandom) throws -> ItemObservation {
        func path() throws -> ItemPath {
            try ItemPath("Documents/" + ["A.txt", "Ünï/cödé.txt", "深い.pdf", "x y"].randomElement(using: &random)!)
        }
        func kind() -> ItemKind { ItemKind.allCases.randomElement(using: &random)! }
        func version() -> VersionID? {
            Bool.random(using: &random) ? VersionID(uuid: UUID(randomFrom: &random)) : nil
        }
        func hash() throws -> ChunkHash? {
            Bool.random(using: &random)
                ? try ChunkHash(digest: (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }) : nil
        }
        func identity() -> LocalFileIdentity {
            var identity = LocalFileIdentity(
                device: random.next(), inode: random.next(), size: Int64.random(in: 0...Int64.max, using: &random),
                modified: Int64.random(in: Int64.min...Int64.max, using: &random),
                changed: Int64.random(in: Int64.min...Int64.max, using: &random))
            identity.capturedAt = Int64.random(in: Int64.min...Int64.max, using: &random)
            identity.mode = UInt32.random(in: 0...UInt32.max, using: &random)
            identity.members = random.next()
            return identity
        }
        func size() -> Int64 { Int64.random(in: Int64.min...Int64.max, using: &random) }
        var observation = ItemObservation(
            id: ItemID(uuid: UUID(randomFrom: &random)),
            requests: ItemRequests(rawValue: UInt8.random(in: 0...15, using: &random)))
        if Bool.random(using: &random) {
            observation.remote = RemoteView(
                path: try path(), kind: kind(), version: version(), contentHash: try hash(), size: size(),
                isDeleted: Bool.random(using: &random))
        }
        if Bool.random(using: &random) {
            observation.local = LocalView(path: try path(), kind: kind(), identity: identity(), contentHash: try hash())
        }
        if Bool.random(using: &random) {
            observation.synced = SyncedView(
                path: try path(), kind: kind(), version: version(), contentHash: try hash(), size: size(),
                identity: Bool.random(using: &random) ? identity() : nil)
        }
        return observation
    }

    /// An item with each optional field present or not at random, errors and non-ASCII names among them.
    static func randomItem(_ random: inout SeededRandom) throws -> LocalItem {
        let names = ["List.txt", "Ünïcödé.txt", "深い/フォルダ.txt", "a b/c.pdf", "Milk.item"]
        var item = LocalItem(
            id: ItemID(uuid: UUID(randomFrom: &random)),
            path: try ItemPath("Documents/" + names.randomElement(using: &random)!),
            kind: ItemKind.allCases.randomElement(using: &random)!)
        if Bool.random(using: &random) {
            var identity = LocalFileIdentity(
                device: random.next(), inode: random.next(), size: Int64.random(in: 0...Int64.max, using: &random),
                modified: Int64.random(in: 0...(1 << 62), using: &random),
                changed: Int64.random(in: 0...Int64.max, using: &random))
            identity.capturedAt = Int64.random(in: 0...(1 << 62), using: &random)
            identity.mode = UInt32.random(in: 0...UInt32.max, using: &random)
            identity.members = random.next()
            item.identity = identity
        }
        if Bool.random(using: &random) { item.baseVersion = VersionID(uuid: UUID(randomFrom: &random)) }
        if Bool.random(using: &random) { item.serverVersion = VersionID(uuid: UUID(randomFrom: &random)) }
        if Bool.random(using: &random) {
            item.contentHash = try ChunkHash(digest: (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
        }
        item.size = Int64.random(in: 0...Int64.max, using: &random)
        item.isPlaceholder = Bool.random(using: &random)
        item.hasUnresolvedConflicts = Bool.random(using: &random)
        if Bool.random(using: &random) {
            item.uploadError = ItemError(code: .quotaExceeded, message: "over quota by \(random.next() % 1000) bytes")
        }
        if Bool.random(using: &random) {
            item.downloadError = ItemError(code: ProtocolError.Code(rawValue: "someFutureCode"), message: "…✓")
        }
        return item
    }
}

extension UUID {
    init(randomFrom random: inout SeededRandom) {
        let (high, low) = (random.next(), random.next())
        self = withUnsafeBytes(of: (high, low)) { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }
}
