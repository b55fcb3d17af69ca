import Foundation
import PostgresNIO
import UbiquityProtocol

/// The drafts of versions being uploaded, in the database the nodes share (tables `draft` and `draft_chunk`, a
/// row a chunk), so that a device may grow a draft through one node and follow it through another.
///
/// The rules are ``DraftBoard``'s: a draft grows in order, stops at ``DraftPage/draftLimit`` chunks, and an
/// account's drafts hold at most as many together (its least recently grown go first); one an hour without growth
/// goes when its account's drafts next grow. The commit of a version of the item, or its deletion, ends the draft
/// in the commit's own transaction (``PostgresItemWork``). There is no bound across accounts: the drafts are rows
/// of a database, not a process's memory.
final class PostgresDraftStore: DraftStore {
    let store: PostgresMetadataStore
    /// How long a draft that does not grow is kept.
    let idleLimit: Duration

    init(store: PostgresMetadataStore, idleLimit: Duration = .seconds(3_600)) {
        self.store = store
        self.idleLimit = idleLimit
    }

    func append(_ request: DraftAppendRequest, to version: VersionID, of item: ItemID, in container: ContainerKey)
        async throws -> Int
    {
        let now = StoredForm.microseconds(store.clock())
        let idle = Int64(idleLimit.components.seconds) * 1_000_000
        let (account, containerID, itemID) = (container.account.string, container.container.string, item.string)
        return try await store.write(retryingUniqueViolations: true) { db in
            try await db.run(
                """
                INSERT INTO draft (account_id, container_id, item_id, version_id, chunk_count, grown_at)
                VALUES (\(account), \(containerID), \(itemID), \(version.string), 0, \(now)) ON CONFLICT DO NOTHING
                """)
            guard
                let (stored, count, total) = try await db.row(
                    """
                    SELECT version_id, chunk_count, total FROM draft
                    WHERE account_id = \(account) AND container_id = \(containerID) AND item_id = \(itemID)
                    FOR UPDATE
                    """, as: (String, Int64, Int64?).self)
            else { throw ProtocolError(.internalError, "the draft of \(item) vanished while it grew") }
            let sameVersion = stored == version.string
            let held = sameVersion ? Int(count) : 0
            guard held == request.from else {
                throw ProtocolError(
                    .draftOutOfStep, "the draft of \(version) holds \(held) chunks, not \(request.from)")
            }
            if !sameVersion {
                try await db.run(
                    """
                    DELETE FROM draft_chunk
                    WHERE account_id = \(account) AND container_id = \(containerID) AND item_id = \(itemID)
                    """)
            }
            let added = Array(request.chunks.prefix(max(0, DraftPage.draftLimit - held)))
            if !added.isEmpty {
                try await db.run(
                    """
                    INSERT INTO draft_chunk (account_id, container_id, item_id, position, hash, size)
                    SELECT \(account), \(containerID), \(itemID), \(Int64(held)) + ordinality - 1, hash, size
                    FROM unnest(\(added.map(\.hash.string)), \(added.map(\.size))) WITH ORDINALITY
                        AS entry(hash, size, ordinality)
                    """)
            }
            let length = held + added.count
            try await db.run(
                """
                UPDATE draft SET version_id = \(version.string), chunk_count = \(Int64(length)),
                    total = \(request.total ?? (sameVersion ? total : nil)), grown_at = \(now)
                WHERE account_id = \(account) AND container_id = \(containerID) AND item_id = \(itemID)
                """)
            // The account's other drafts: those idle too long go, then the least recently grown while the
            // account's drafts hold more than a draft may.
            let others = try await db.rows(
                """
                SELECT container_id, item_id, chunk_count, grown_at FROM draft
                WHERE account_id = \(account) AND NOT (container_id = \(containerID) AND item_id = \(itemID))
                ORDER BY grown_at
                """, as: (String, String, Int64, Int64).self)
            var heldByAccount = Int64(length) + others.reduce(0) { $0 + $1.2 }
            var dropped: [(container: String, item: String)] = []
            for (otherContainer, otherItem, otherCount, grown) in others
            where now - grown >= idle || heldByAccount > Int64(DraftPage.draftLimit) {
                dropped.append((otherContainer, otherItem))
                heldByAccount -= otherCount
            }
            if !dropped.isEmpty {
                try await db.run(
                    """
                    WITH gone AS (
                        DELETE FROM draft_chunk USING unnest(\(dropped.map(\.container)), \(dropped.map(\.item)))
                            AS entry(container_id, item_id)
                        WHERE draft_chunk.account_id = \(account) AND draft_chunk.container_id = entry.container_id
                            AND draft_chunk.item_id = entry.item_id)
                    DELETE FROM draft USING unnest(\(dropped.map(\.container)), \(dropped.map(\.item)))
                        AS entry(container_id, item_id)
                    WHERE draft.account_id = \(account) AND draft.container_id = entry.container_id
                        AND draft.item_id = entry.item_id
                    """)
            }
            return length
        }
    }

    func page(of version: VersionID, of item: ItemID, in container: ContainerKey, from: Int) async throws
        -> DraftPage?
    {
        let (account, containerID, itemID) = (container.account.string, container.container.string, item.string)
        return try await store.read { db in
            guard
                let (stored, count, total) = try await db.row(
                    """
                    SELECT version_id, chunk_count, total FROM draft
                    WHERE account_id = \(account) AND container_id = \(containerID) AND item_id = \(itemID)
                    """, as: (String, Int64, Int64?).self),
                stored == version.string
            else { return nil }
            let start = Int64(min(max(0, from), Int(count)))
            let rows = try await db.rows(
                """
                SELECT hash, size FROM draft_chunk
                WHERE account_id = \(account) AND container_id = \(containerID) AND item_id = \(itemID)
                    AND position >= \(start) AND position < \(count)
                ORDER BY position LIMIT \(Int64(DraftPage.pageLimit))
                """, as: (String, Int64).self)
            return DraftPage(
                count: Int(count), chunks: try rows.map { ChunkReference(hash: try ChunkHash($0.0), size: $0.1) },
                total: total)
        }
    }

    /// Nothing to do: the commit's transaction ended the draft.
    func committed(_ item: ItemID, in container: ContainerKey) {}

    func end(_ item: ItemID, in container: ContainerKey) async throws {
        let (account, containerID, itemID) = (container.account.string, container.container.string, item.string)
        try await store.write { db in
            try await db.run(
                """
                WITH gone AS (
                    DELETE FROM draft_chunk
                    WHERE account_id = \(account) AND container_id = \(containerID) AND item_id = \(itemID))
                DELETE FROM draft
                WHERE account_id = \(account) AND container_id = \(containerID) AND item_id = \(itemID)
                """)
        }
    }
}
