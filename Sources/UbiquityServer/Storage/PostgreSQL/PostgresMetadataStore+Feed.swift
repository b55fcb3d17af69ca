import Foundation
import PostgresNIO
import UbiquityProtocol

extension PostgresMetadataStore {
    /// The container's row, made on first use and locked until the transaction ends: every write to a container
    /// takes this first, so writes to one container run one after another on every node. (One statement: an
    /// insert that meets the existing row updates it, which locks it, and returns it as the lock found it.)
    static func lockContainer(_ key: ContainerKey, in db: PostgresTransaction) async throws -> ContainerState {
        guard
            let (epoch, feed, keyValues) = try await db.row(
                """
                INSERT INTO container (account_id, container_id, epoch)
                VALUES (\(key.account.string), \(key.container.string), \(StoredForm.newEpoch()))
                ON CONFLICT (account_id, container_id) DO UPDATE SET epoch = container.epoch
                RETURNING epoch, feed_sequence, kv_sequence
                """, as: (String, Int64, Int64).self)
        else { throw ProtocolError(.internalError, "container \(key.container) could not be locked") }
        return ContainerState(epoch: epoch, feedSequence: feed, keyValueSequence: keyValues)
    }

    /// The container's state as the transaction's snapshot sees it, or ``ContainerState/empty``.
    static func containerState(_ key: ContainerKey, in db: PostgresTransaction) async throws -> ContainerState {
        guard
            let (epoch, feed, keyValues) = try await db.row(
                """
                SELECT epoch, feed_sequence, kv_sequence FROM container
                WHERE account_id = \(key.account.string) AND container_id = \(key.container.string)
                """, as: (String, Int64, Int64).self)
        else { return .empty }
        return ContainerState(epoch: epoch, feedSequence: feed, keyValueSequence: keyValues)
    }

    public func changes(in container: ContainerKey, since: ChangeToken?, limit: Int) async throws -> ChangePage {
        try await read { db in
            let state = try await Self.containerState(container, in: db)
            let start =
                try since.map {
                    try FeedToken($0, feed: .changes, epoch: state.epoch, latest: state.feedSequence).sequence
                } ?? 0
            let pageSize = min(max(1, limit), 100_000)
            let rows = try await db.rows(
                """
                SELECT sequence, body FROM change
                WHERE account_id = \(container.account.string) AND container_id = \(container.container.string)
                    AND sequence > \(start)
                ORDER BY sequence LIMIT \(pageSize + 1)
                """, as: (Int64, String).self)
            let page = rows.prefix(pageSize)
            let changes = try page.map { try StoredForm.decode(Change.self, $0.1) }
            let last = page.last?.0 ?? start
            let wanted = FeedVersions.wanted(by: changes)
            var versions: [VersionRecord] = []
            if !wanted.isEmpty {
                let found = try await db.rows(
                    """
                    SELECT version.version_id, version.item_id, version.record, item.path, item.current_version,
                        item.is_deleted
                    FROM version JOIN item ON item.account_id = version.account_id
                        AND item.container_id = version.container_id AND item.item_id = version.item_id
                    WHERE version.account_id = \(container.account.string)
                        AND version.version_id = ANY(\(wanted.map(\.version.string)))
                        AND version.container_id = \(container.container.string)
                    """, as: (String, String, String, String, String?, Bool).self)
                let rows = Dictionary(found.map { ($0.0, $0) }, uniquingKeysWith: { first, _ in first })
                versions = try wanted.compactMap { wanted -> VersionRecord? in
                    guard let row = rows[wanted.version.string], row.1 == wanted.item.string,
                        FeedVersions.isStill(wanted, path: row.3, currentVersion: row.4, isDeleted: row.5)
                    else { return nil }
                    return try StoredForm.decode(VersionRecord.self, row.2)
                }.filter(FeedVersions.carries)
            }
            return ChangePage(
                changes: changes, nextToken: FeedToken(feed: .changes, epoch: state.epoch, sequence: last).token,
                hasMore: rows.count > page.count, versions: versions)
        }
    }
}
