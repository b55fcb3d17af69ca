import Foundation
import GRDB
import UbiquityProtocol

extension SQLiteMetadataStore {
    /// The container's state, made on first use when `create` is set.
    static func containerState(_ key: ContainerKey, in db: Database, create: Bool) throws -> ContainerState? {
        let row = try db.fetchRow(
            sql: "SELECT epoch, feed_sequence, kv_sequence FROM container WHERE account_id = ? AND container_id = ?",
            arguments: [key.account.string, key.container.string])
        if let row {
            return ContainerState(
                epoch: row["epoch"], feedSequence: row["feed_sequence"], keyValueSequence: row["kv_sequence"])
        }
        guard create else { return nil }
        let epoch = StoredForm.newEpoch()
        try db.run(
            sql: "INSERT INTO container (account_id, container_id, epoch) VALUES (?, ?, ?)",
            arguments: [key.account.string, key.container.string, epoch])
        return ContainerState(epoch: epoch, feedSequence: 0, keyValueSequence: 0)
    }

    /// Appends `changes` to the container's feed; returns the token after them.
    static func append(_ changes: [Change], to key: ContainerKey, in db: Database) throws -> ChangeToken {
        var state = try containerState(key, in: db, create: true)!
        for change in changes {
            state.feedSequence += 1
            try db.run(
                sql: "INSERT INTO change (account_id, container_id, sequence, body) VALUES (?, ?, ?, ?)",
                arguments: [key.account.string, key.container.string, state.feedSequence, try encode(change)])
        }
        if !changes.isEmpty {
            try db.run(
                sql: "UPDATE container SET feed_sequence = ? WHERE account_id = ? AND container_id = ?",
                arguments: [state.feedSequence, key.account.string, key.container.string])
        }
        return FeedToken(feed: .changes, epoch: state.epoch, sequence: state.feedSequence).token
    }

    /// The token naming the container's latest feed position.
    static func feedToken(_ key: ContainerKey, in db: Database) throws -> ChangeToken {
        let state = try containerState(key, in: db, create: false)
        return FeedToken(feed: .changes, epoch: state?.epoch ?? "0", sequence: state?.feedSequence ?? 0).token
    }

    public func changes(in container: ContainerKey, since: ChangeToken?, limit: Int) async throws -> ChangePage {
        try await pool.read { db in
            let state =
                try Self.containerState(container, in: db, create: false)
                ?? .empty
            let start =
                try since.map {
                    try FeedToken($0, feed: .changes, epoch: state.epoch, latest: state.feedSequence).sequence
                } ?? 0
            let pageSize = min(max(1, limit), 100_000)
            let rows = try db.fetchRows(
                sql: """
                    SELECT sequence, body FROM change WHERE account_id = ? AND container_id = ? AND sequence > ?
                    ORDER BY sequence LIMIT ?
                    """,
                arguments: [container.account.string, container.container.string, start, pageSize + 1])
            let page = rows.prefix(pageSize)
            let changes = try page.map { try Self.decode(Change.self, $0["body"]) }
            let last: Int64 = page.last?["sequence"] ?? start
            let lookup = try db.cachedStatement(
                sql: """
                    SELECT version.record, item.path, item.current_version, item.is_deleted FROM version
                    JOIN item ON item.account_id = version.account_id AND item.container_id = version.container_id
                        AND item.item_id = version.item_id
                    WHERE version.account_id = ? AND version.version_id = ? AND version.container_id = ?
                        AND version.item_id = ?
                    """)
            let versions = try FeedVersions.wanted(by: changes).compactMap { wanted -> VersionRecord? in
                let arguments: StatementArguments = [
                    container.account.string, wanted.version.string, container.container.string,
                    wanted.item.string,
                ]
                guard let row = try Row.fetchOne(lookup, arguments: arguments),
                    FeedVersions.isStill(
                        wanted, path: row["path"], currentVersion: row["current_version"],
                        isDeleted: row["is_deleted"])
                else { return nil }
                return try Self.decode(VersionRecord.self, row["record"] as String)
            }.filter(FeedVersions.carries)
            return ChangePage(
                changes: changes, nextToken: FeedToken(feed: .changes, epoch: state.epoch, sequence: last).token,
                hasMore: rows.count > page.count, versions: versions)
        }
    }
}
