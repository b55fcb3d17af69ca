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
            let wanted = FeedVersions.wanted(by: changes).map(\.string)
            var versions: [VersionRecord] = []
            if !wanted.isEmpty {
                let found = try await db.rows(
                    """
                    SELECT version_id, record FROM version
                    WHERE account_id = \(container.account.string) AND version_id = ANY(\(wanted))
                        AND container_id = \(container.container.string)
                    """, as: (String, String).self)
                let records = Dictionary(found, uniquingKeysWith: { first, _ in first })
                versions = try wanted.compactMap { id in
                    try records[id].map { try StoredForm.decode(VersionRecord.self, $0) }
                }.filter(FeedVersions.carries)
            }
            return ChangePage(
                changes: changes, nextToken: FeedToken(feed: .changes, epoch: state.epoch, sequence: last).token,
                hasMore: rows.count > page.count, versions: versions)
        }
    }
}
