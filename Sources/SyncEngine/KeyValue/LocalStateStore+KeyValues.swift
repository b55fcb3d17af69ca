import Foundation
import GRDB
import UbiquityProtocol

/// The container's key-value store on this device: every key's latest value as this device knows it, and the writes
/// made here not yet acknowledged by the service (pending), kept in the state database so none is lost.
extension LocalStateStore {
    static func registerKeyValueMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v3-key-values") { db in
            try db.execute(
                sql: """
                    CREATE TABLE key_value (
                        key TEXT PRIMARY KEY, value TEXT, timestamp REAL NOT NULL, pending INTEGER NOT NULL);
                    """)
        }
    }

    /// The store as this device sees it: the service's values with this device's pending writes on top.
    public func keyValues() throws -> [String: PropertyListValue] {
        try pool.read { db in
            var values: [String: PropertyListValue] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, value FROM key_value WHERE value IS NOT NULL") {
                values[row["key"]] = try Self.decodeValue(row["value"])
            }
            return values
        }
    }

    /// Records writes made on this device (pending until the service has them), unless they would break `limits`.
    /// - Throws: ``ProtocolError/Code/keyValueKeyTooLong``, ``ProtocolError/Code/keyValueTooManyKeys`` or
    ///   ``ProtocolError/Code/keyValueStoreTooLarge``; nothing is written then.
    func writeKeyValues(
        _ puts: [String: PropertyListValue], removing removes: Set<String>, at timestamp: Date,
        limits: KeyValueLimits
    ) throws {
        let encoded = try puts.mapValues(Self.encodeValue)
        try pool.write { db in
            var store: [String: PropertyListValue] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, value FROM key_value WHERE value IS NOT NULL") {
                store[row["key"]] = try Self.decodeValue(row["value"])
            }
            if let violation = limits.violation(store: store, puts: puts, removes: removes) { throw violation }
            for key in removes where puts[key] == nil {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO key_value (key, value, timestamp, pending) VALUES (?, NULL, ?, 1)",
                    arguments: [key, timestamp.timeIntervalSince1970])
            }
            for (key, value) in encoded {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO key_value (key, value, timestamp, pending) VALUES (?, ?, ?, 1)",
                    arguments: [key, value, timestamp.timeIntervalSince1970])
            }
        }
    }

    /// The writes made here that the service does not have yet.
    func pendingKeyValueWrites() throws -> [KeyValueWrite] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT key, value, timestamp FROM key_value WHERE pending = 1 ORDER BY key")
                .map { row in
                    KeyValueWrite(
                        key: row["key"], value: try (row["value"] as String?).map(Self.decodeValue),
                        timestamp: Date(timeIntervalSince1970: row["timestamp"]))
                }
        }
    }

    /// Marks `writes` as on the service (those not written again meanwhile).
    func settleKeyValueWrites(_ writes: [KeyValueWrite]) throws {
        try pool.write { db in
            for write in writes {
                try db.execute(
                    sql: "UPDATE key_value SET pending = 0 WHERE key = ? AND timestamp = ? AND pending = 1",
                    arguments: [write.key, write.timestamp.timeIntervalSince1970])
            }
            try db.execute(sql: "DELETE FROM key_value WHERE value IS NULL AND pending = 0")
        }
    }

    /// Drops pending writes the service refused; the keys come back with the service's values on the next read
    /// of the whole store.
    func dropKeyValueWrites(_ writes: [KeyValueWrite]) throws {
        try pool.write { db in
            for write in writes {
                try db.execute(
                    sql: "DELETE FROM key_value WHERE key = ? AND timestamp = ? AND pending = 1",
                    arguments: [write.key, write.timestamp.timeIntervalSince1970])
            }
        }
    }

    /// Applies the service's entries: each key takes the service's latest write unless a pending write made here
    /// is later (it wins on the service too, when sent). With `whole`, the entries are the whole store, and keys
    /// missing from it (and not pending) are gone.
    /// - Returns: The keys whose value changed here, sorted.
    func applyKeyValueEntries(_ entries: [KeyValueEntry], whole: Bool) throws -> [String] {
        let encoded = try entries.map { ($0, try $0.value.map(Self.encodeValue)) }
        return try pool.write { db in
            var changed = Set<String>()
            for (entry, value) in encoded {
                let row = try Row.fetchOne(
                    db, sql: "SELECT value, timestamp, pending FROM key_value WHERE key = ?", arguments: [entry.key])
                if let row, row["pending"] as Int64 == 1,
                    row["timestamp"] as Double > entry.timestamp.timeIntervalSince1970
                {
                    continue
                }
                let before = try (row?["value"] as String?).map(Self.decodeValue)
                if let value {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO key_value (key, value, timestamp, pending) VALUES (?, ?, ?, 0)",
                        arguments: [entry.key, value, entry.timestamp.timeIntervalSince1970])
                } else {
                    try db.execute(sql: "DELETE FROM key_value WHERE key = ?", arguments: [entry.key])
                }
                // Compared as values: the same value written here and read back from the service is no change.
                if before != entry.value { changed.insert(entry.key) }
            }
            if whole {
                let present = Set(entries.map(\.key))
                for key in try String.fetchAll(db, sql: "SELECT key FROM key_value WHERE pending = 0")
                where !present.contains(key) {
                    try db.execute(sql: "DELETE FROM key_value WHERE key = ?", arguments: [key])
                    changed.insert(key)
                }
            }
            return changed.sorted()
        }
    }

    /// A value as stored: JSON with sorted keys, so the same value is always stored as the same text.
    private static func encodeValue(_ value: PropertyListValue) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    private static func decodeValue(_ text: String) throws -> PropertyListValue {
        try JSONDecoder().decode(PropertyListValue.self, from: Data(text.utf8))
    }
}
