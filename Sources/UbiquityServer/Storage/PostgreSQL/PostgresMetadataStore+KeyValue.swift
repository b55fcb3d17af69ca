import Foundation
import PostgresNIO
import UbiquityProtocol

extension PostgresMetadataStore {
    public func applyKeyValues(
        _ writes: [KeyValueWrite], from device: DeviceID, in container: ContainerKey, limits: KeyValueLimits
    ) async throws -> KeyValueBatchResponse {
        try await write { db in
            let state = try await Self.lockContainer(container, in: db)
            var store = KeyValueStoreState(
                limits: limits, entries: try await Self.keyValueEntries(container, after: 0, in: db),
                sequence: UInt64(state.keyValueSequence))
            let before = store.sequence
            let changed = try store.apply(
                writes.map { KeyValueStoreState.Write(key: $0.key, value: $0.value, timestamp: $0.timestamp) },
                from: device)
            let (account, containerID) = (container.account.string, container.container.string)
            for (key, entry) in store.changes(since: before) {
                let value = try entry.value.map(StoredForm.encode)
                try await db.run(
                    """
                    INSERT INTO kv_entry (account_id, container_id, key, value, timestamp, device_id, sequence)
                    VALUES (\(account), \(containerID), \(key), \(value), \(StoredForm.microseconds(entry.timestamp)), \
                    \(entry.device.string), \(Int64(entry.sequence)))
                    ON CONFLICT (account_id, container_id, key) DO UPDATE SET value = excluded.value,
                        timestamp = excluded.timestamp, device_id = excluded.device_id, sequence = excluded.sequence
                    """)
            }
            try await db.run(
                """
                UPDATE container SET kv_sequence = \(Int64(store.sequence))
                WHERE account_id = \(account) AND container_id = \(containerID)
                """)
            let token = FeedToken(feed: .keyValues, epoch: state.epoch, sequence: Int64(store.sequence)).token
            return KeyValueBatchResponse(changedKeys: changed, token: token)
        }
    }

    public func keyValues(in container: ContainerKey, since: ChangeToken?) async throws -> KeyValueChanges {
        try await read { db in
            let state = try await Self.containerState(container, in: db)
            let start = try since.map {
                try FeedToken($0, feed: .keyValues, epoch: state.epoch, latest: state.keyValueSequence).sequence
            }
            let entries = try await Self.keyValueEntries(container, after: start ?? 0, in: db)
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

    private static func keyValueEntries(_ container: ContainerKey, after sequence: Int64, in db: PostgresTransaction)
        async throws -> [String: KeyValueStoreState.Entry]
    {
        let rows = try await db.rows(
            """
            SELECT key, value, timestamp, device_id, sequence FROM kv_entry
            WHERE account_id = \(container.account.string) AND container_id = \(container.container.string)
                AND sequence > \(sequence)
            """, as: (String, String?, Int64, String, Int64).self)
        var entries: [String: KeyValueStoreState.Entry] = [:]
        for (key, value, timestamp, device, sequence) in rows {
            entries[key] = KeyValueStoreState.Entry(
                value: try value.map { try StoredForm.decode(PropertyListValue.self, $0) },
                timestamp: StoredForm.date(timestamp), device: try DeviceID(device), sequence: UInt64(sequence))
        }
        return entries
    }
}
