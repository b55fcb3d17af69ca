import Foundation
import GRDB
import UbiquityProtocol

extension LocalStateStore {
    /// The versions of an item other than its current one, as last heard from the service (conflict and history).
    public func otherVersions(of id: ItemID) throws -> [VersionRecord] {
        try readOne { db in
            try String.fetchAll(
                db.cachedStatement(sql: "SELECT record FROM version WHERE item_id = ?"), arguments: [id.string]
            )
            .map { try WireJSONDecoder().decode(VersionRecord.self, from: $0) }
            .sorted { $0.modificationDate > $1.modificationDate }
        }
    }

    /// The record of an item's current version as this device last had it (heard with the item, or made by an
    /// upload from here); compare its id with the item's server version before trusting it.
    public func currentVersionRecord(of id: ItemID) throws -> VersionRecord? {
        try value(forKey: Self.currentVersionKey(of: id)).flatMap {
            try? WireJSONDecoder().decode(VersionRecord.self, from: $0)
        }
    }

    /// Keeps the record of an item's current version.
    func setCurrentVersionRecord(_ record: VersionRecord, of id: ItemID) throws {
        try pool.write { db in try Self.setCurrentVersionRecord(record, of: id, in: db) }
    }

    static func setCurrentVersionRecord(_ record: VersionRecord, of id: ItemID, in db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO value (key, value) VALUES (?, ?)")
            .execute(arguments: [currentVersionKey(of: id), try encode(record)])
    }

    static func currentVersionKey(of id: ItemID) -> String { "versions.current.\(id.string)" }

    /// Replaces the recorded other versions of an item.
    func setOtherVersions(_ versions: [VersionRecord], of id: ItemID) throws {
        let records = try versions.map {
            ($0.id.string, String(decoding: try WireJSONEncoder().encode($0), as: UTF8.self))
        }
        try pool.write { db in
            try db.execute(sql: "DELETE FROM version WHERE item_id = ?", arguments: [id.string])
            for (version, record) in records {
                try db.execute(
                    sql: "INSERT INTO version (item_id, version_id, record) VALUES (?, ?, ?)",
                    arguments: [id.string, version, record])
            }
        }
    }
}

/// Where a chunk's bytes lie in a local file: the engine's chunk cache is the content already on this device, so a
/// download takes any chunk it finds here (checked against its hash) instead of fetching it.
struct LocalChunkLocation: Hashable, Sendable {
    /// The file's path in the container (a package member's path includes the package's).
    var file: String
    var offset: Int64
    var size: Int
}

extension LocalStateStore {
    /// Records where the chunks of an item's local copy lie (replacing what was recorded for it).
    func setChunkLocations(_ locations: [(ChunkHash, LocalChunkLocation)], of id: ItemID) throws {
        try pool.write { db in try Self.setChunkLocations(locations, of: id, in: db) }
    }

    static func setChunkLocations(
        _ locations: [(ChunkHash, LocalChunkLocation)], of id: ItemID, in db: Database
    ) throws {
        try db.cachedStatement(sql: "DELETE FROM local_chunk WHERE item_id = ?").execute(arguments: [id.string])
        let statement = try db.cachedStatement(
            sql: "INSERT INTO local_chunk (hash, item_id, file, offset, size) VALUES (?, ?, ?, ?, ?)")
        for (hash, location) in locations {
            try statement.execute(arguments: [hash.string, id.string, location.file, location.offset, location.size])
        }
    }

    /// The local places a chunk was last seen.
    func chunkLocations(of hash: ChunkHash) throws -> [LocalChunkLocation] {
        try chunkLocations(of: [hash])[hash] ?? []
    }

    /// Where local files hold each of `hashes` (a few places each at most); a hash no local file holds is left out.
    /// Not one snapshot for all: a location is a hint, checked against its hash when read.
    func chunkLocations(of hashes: some Sequence<ChunkHash>) throws -> [ChunkHash: [LocalChunkLocation]] {
        try readOne { db in
            let statement = try db.cachedStatement(
                sql: "SELECT file, offset, size FROM local_chunk WHERE hash = ? LIMIT 4")
            var found: [ChunkHash: [LocalChunkLocation]] = [:]
            for hash in hashes where found[hash] == nil {
                let locations = try Row.fetchAll(statement, arguments: [hash.string]).map {
                    LocalChunkLocation(file: $0["file"], offset: $0["offset"], size: $0["size"])
                }
                if !locations.isEmpty { found[hash] = locations }
            }
            return found
        }
    }
}

/// A change to an item's versions made on this device and not yet acknowledged by the service: kept in order in the
/// state database, so one made offline (or before a crash) is sent when the service is reachable again.
public enum VersionOperation: Hashable, Sendable, Codable {
    /// Make a kept version the current one.
    case replaceCurrent(VersionID)
    /// Mark a conflict version resolved.
    case markResolved(VersionID)
    /// Remove a non-current version.
    case remove(VersionID)
}

extension LocalStateStore {
    /// Queues operations on an item's versions, in order, in one transaction.
    func enqueue(_ operations: [VersionOperation], of id: ItemID) throws {
        let encoded = try operations.map { String(decoding: try WireJSONEncoder().encode($0), as: UTF8.self) }
        try pool.write { db in
            for operation in encoded {
                try db.execute(
                    sql: "INSERT INTO outbox (item_id, operation) VALUES (?, ?)", arguments: [id.string, operation])
            }
        }
    }

    /// The oldest queued operation.
    func nextQueuedOperation() throws -> (sequence: Int64, item: ItemID, operation: VersionOperation)? {
        try pool.read { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT sequence, item_id, operation FROM outbox ORDER BY sequence LIMIT 1")
            else { return nil }
            let text: String = row["operation"]
            return (
                row["sequence"], try ItemID(row["item_id"] as String),
                try JSONDecoder().decode(VersionOperation.self, from: Data(text.utf8))
            )
        }
    }

    /// How many operations wait to be sent.
    public func queuedOperationCount() throws -> Int {
        try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox") ?? 0 }
    }

    /// Drops a sent operation.
    func dequeue(_ sequence: Int64) throws {
        try pool.write { db in try db.execute(sql: "DELETE FROM outbox WHERE sequence = ?", arguments: [sequence]) }
    }

    /// Drops a queued operation the service has just taken and applies it to the item's records in the same
    /// transaction: the records are the service's state again. (Otherwise records written from an answer the service
    /// gave before the operation would show it undone once it leaves the queue, and the next answer would announce
    /// its change a second time.)
    func dequeue(_ sequence: Int64, applying operation: VersionOperation, to id: ItemID) throws {
        try writingRecords { db, touched in
            touched.insert(id)
            if var state = try Self.recordedVersionState(of: id, in: db),
                (try? Self.apply(operation, to: &state, at: state.item.path)) == true
            {
                state.item.hasUnresolvedConflicts = state.others.contains { $0.isConflict && !$0.isResolved }
                try Self.store(state, in: db)
            }
            try db.execute(sql: "DELETE FROM outbox WHERE sequence = ?", arguments: [sequence])
        }
    }

    /// Runs `body` in a write transaction that may change items' records other than through ``write(_:)``; `body`
    /// names each item it may change, whose cached record is dropped once the transaction ends.
    func writingRecords<Value>(_ body: (Database, inout Set<ItemID>) throws -> Value) throws -> Value {
        try cache.write {
            var touched = Set<ItemID>()
            let value = try pool.write { db in try body(db, &touched) }
            return (value, touched.map { ($0, nil) })
        }
    }
}
