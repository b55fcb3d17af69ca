import Foundation
import GRDB
import UbiquityProtocol

extension SQLiteMetadataStore {
    public func applyKeyValues(
        _ writes: [KeyValueWrite], from device: DeviceID, in container: ContainerKey, limits: KeyValueLimits
    ) async throws -> KeyValueBatchResponse {
        try await committer.write { db in
            let state = try Self.containerState(container, in: db, create: true)!
            var store = KeyValueStoreState(
                limits: limits, entries: try Self.keyValueEntries(container, after: 0, in: db),
                sequence: UInt64(state.keyValueSequence))
            let before = store.sequence
            let changed = try store.apply(
                writes.map { KeyValueStoreState.Write(key: $0.key, value: $0.value, timestamp: $0.timestamp) },
                from: device)
            for (key, entry) in store.changes(since: before) {
                try db.run(
                    sql: """
                        INSERT OR REPLACE INTO kv_entry
                            (account_id, container_id, key, value, timestamp, device_id, sequence)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        container.account.string, container.container.string, key, try entry.value.map(Self.encode),
                        Self.microseconds(entry.timestamp), entry.device.string, Int64(entry.sequence),
                    ])
            }
            try db.run(
                sql: "UPDATE container SET kv_sequence = ? WHERE account_id = ? AND container_id = ?",
                arguments: [Int64(store.sequence), container.account.string, container.container.string])
            let token = FeedToken(feed: .keyValues, epoch: state.epoch, sequence: Int64(store.sequence)).token
            return KeyValueBatchResponse(changedKeys: changed, token: token)
        }
    }

    public func keyValues(in container: ContainerKey, since: ChangeToken?) async throws -> KeyValueChanges {
        try await pool.read { db in
            let state =
                try Self.containerState(container, in: db, create: false)
                ?? .empty
            let start = try since.map {
                try FeedToken($0, feed: .keyValues, epoch: state.epoch, latest: state.keyValueSequence).sequence
            }
            let entries = try Self.keyValueEntries(container, after: start ?? 0, in: db)
                .filter { start != nil || $0.value.value != nil }
                .sorted { $0.value.sequence < $1.value.sequence }
                .map {
                    KeyValueEntry(
                        key: $0.key, value: $0.value.value, timestamp: $0.value.timestamp, device: $0.value.device)
                }
            let token = FeedToken(feed: .keyValues, epoch: state.epoch, sequence: state.keyValueSequence).token
            return KeyValueChanges(entries: entries, token: token)
        }
    }

    private static func keyValueEntries(_ container: ContainerKey, after sequence: Int64, in db: Database) throws
        -> [String: KeyValueStoreState.Entry]
    {
        let rows = try db.fetchRows(
            sql: """
                SELECT key, value, timestamp, device_id, sequence FROM kv_entry
                WHERE account_id = ? AND container_id = ? AND sequence > ?
                """,
            arguments: [container.account.string, container.container.string, sequence])
        var entries: [String: KeyValueStoreState.Entry] = [:]
        for row in rows {
            let value: String? = row["value"]
            let sequence: Int64 = row["sequence"]
            entries[row["key"]] = KeyValueStoreState.Entry(
                value: try value.map { try decode(PropertyListValue.self, $0) }, timestamp: date(row["timestamp"]),
                device: try DeviceID(row["device_id"]), sequence: UInt64(sequence))
        }
        return entries
    }
}
