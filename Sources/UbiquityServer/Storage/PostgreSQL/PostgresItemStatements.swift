import PostgresNIO

// The statements of the group committer's transactions (``PostgresItemCommitter``), prepared once per connection.
//
// Each has one shape whatever the operations ask for: a key list or a write that has nothing is an empty array, and
// `unnest` of an empty array gives no rows. A statement sent as text is parsed and planned again each time (about
// 0.6 ms of the database's time for the lookup and as much for the writes, more than running them); a prepared one
// is parsed once, and PostgreSQL plans it once for every set of parameters (its generic plan) once the plans it
// made for the first few were no cheaper. The account and container are `$1` and `$2` in each.

/// Takes a container's row lock, making its row on first use; and, when `lockingAccount`, the account's lock too,
/// in the same statement. Returns the container's epoch and sequences as they are under the lock.
///
/// It also has the rest of the transaction plan its prepared statements once for any parameters
/// (`plan_cache_mode`, for this transaction only): the plans PostgreSQL would make for given keys are the same index
/// lookups, and planning the lookup anew each time cost more than running it.
///
/// Sent as text, not prepared (its planning costs little), so that it can go without waiting for its answer: the
/// lookup is sent right behind it (``PostgresItemWork/init(locking:lockingAccount:prefetching:in:)``).
enum ContainerLockStatement {
    typealias Row = (String, Int64, Int64, Int64, String)

    static func query(_ container: ContainerKey, lockingAccount: Bool) -> PostgresQuery {
        let (account, containerID) = (container.account.string, container.container.string)
        return """
            WITH account_lock AS (SELECT id FROM account WHERE id = \(account) AND \(lockingAccount) FOR UPDATE),
            planning AS (SELECT set_config('plan_cache_mode', 'force_generic_plan', true) AS mode)
            INSERT INTO container (account_id, container_id, epoch)
            VALUES (\(account), \(containerID), \(StoredForm.newEpoch()))
            ON CONFLICT (account_id, container_id) DO UPDATE SET epoch = container.epoch
            RETURNING epoch, feed_sequence, kv_sequence, (SELECT count(*) FROM account_lock),
                (SELECT mode FROM planning)
            """
    }
}

/// The container's items (with their versions' records) among `items`, the account's versions among `versions` and
/// chunks among `chunks`, and the live items and folders at `pathKeys`.
///
/// Each key is looked up on its own (`unnest` of the keys, then a lateral subquery the planner cannot flatten):
/// with `key = ANY(keys)`, a table that grew since it was last analysed is estimated at a row or two per container,
/// and the planner filters every row of the container instead of looking the keys up in the index.
struct ItemLookupStatement: PostgresPreparedStatement {
    /// A tag (`i` item, `v` version, `c` chunk, `l` live path, `f` folder) and the columns that kind fills.
    typealias Row = (String, String, String, String, String?, Bool, Int64, [String])

    static let sql = """
        SELECT 'i', found.item_id, found.path, found.kind, found.current_version, found.is_deleted, 0::BIGINT, (
            SELECT coalesce(array_agg(record), '{}') FROM version
            WHERE version.account_id = $1 AND version.container_id = $2 AND version.item_id = found.item_id)
        FROM unnest($3::TEXT[]) AS wanted(key) CROSS JOIN LATERAL (
            SELECT item_id, path, kind, current_version, is_deleted FROM item
            WHERE account_id = $1 AND container_id = $2 AND item_id = wanted.key OFFSET 0) AS found
        UNION ALL
        SELECT 'v', found.version_id, found.item_id, found.record, NULL, false, 0, '{}'
        FROM unnest($4::TEXT[]) AS wanted(key) CROSS JOIN LATERAL (
            SELECT version_id, item_id, record FROM version
            WHERE account_id = $1 AND version_id = wanted.key OFFSET 0) AS found
        UNION ALL
        SELECT 'c', found.hash, '', '', NULL, false, 0, '{}'
        FROM unnest($5::TEXT[]) AS wanted(key) CROSS JOIN LATERAL (
            SELECT hash FROM chunk WHERE account_id = $1 AND hash = wanted.key OFFSET 0) AS found
        UNION ALL
        SELECT 'l', found.path_key, found.item_id, found.path, found.kind, false, 0, '{}'
        FROM unnest($6::TEXT[]) AS wanted(key) CROSS JOIN LATERAL (
            SELECT path_key, item_id, path, kind FROM item
            WHERE account_id = $1 AND container_id = $2 AND path_key = wanted.key AND NOT is_deleted
            OFFSET 0) AS found
        UNION ALL
        SELECT 'f', found.path_key, found.path, '', NULL, false, found.item_count, '{}'
        FROM unnest($6::TEXT[]) AS wanted(key) CROSS JOIN LATERAL (
            SELECT path_key, path, item_count FROM folder
            WHERE account_id = $1 AND container_id = $2 AND path_key = wanted.key OFFSET 0) AS found
        """

    var container: ContainerKey
    var items: [String]
    var versions: [String]
    var chunks: [String]
    var pathKeys: [String]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(container.account.string)
        bindings.append(container.container.string)
        bindings.append(items)
        bindings.append(versions)
        bindings.append(chunks)
        bindings.append(pathKeys)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// Everything a group-committed transaction writes but the removal of versions, in one statement: a data-modifying
/// `WITH` per table, which PostgreSQL runs whether or not the statement reads it. No two of them touch one row (the
/// folders removed and kept are different keys), which a statement's parts may not.
struct ItemWriteStatement: PostgresPreparedStatement {
    typealias Row = Int32

    static let sql = """
        WITH items AS (
            INSERT INTO item (account_id, container_id, item_id, path, path_key, kind, current_version, is_deleted)
            SELECT $1, $2, id, path, path_key, kind, nullif(current_version, ''), is_deleted
            FROM unnest($3::TEXT[], $4::TEXT[], $5::TEXT[], $6::TEXT[], $7::TEXT[], $8::BOOLEAN[])
                AS entry(id, path, path_key, kind, current_version, is_deleted)
            ON CONFLICT (account_id, container_id, item_id) DO UPDATE SET path = excluded.path,
                path_key = excluded.path_key, kind = excluded.kind, current_version = excluded.current_version,
                is_deleted = excluded.is_deleted),
        versions AS (
            INSERT INTO version (account_id, version_id, container_id, item_id, record)
            SELECT $1, id, $2, item, record FROM unnest($9::TEXT[], $10::TEXT[], $11::TEXT[]) AS entry(id, item, record)
            ON CONFLICT (account_id, version_id) DO UPDATE SET record = excluded.record),
        version_chunks AS (
            INSERT INTO version_chunk (account_id, version_id, hash)
            SELECT $1, id, hash FROM unnest($12::TEXT[], $13::TEXT[]) AS entry(id, hash)
            ON CONFLICT DO NOTHING),
        emptied_folders AS (
            DELETE FROM folder WHERE account_id = $1 AND container_id = $2 AND path_key = ANY($14::TEXT[])),
        folders AS (
            INSERT INTO folder (account_id, container_id, path_key, path, item_count)
            SELECT $1, $2, path_key, path, item_count
            FROM unnest($15::TEXT[], $16::TEXT[], $17::BIGINT[]) AS entry(path_key, path, item_count)
            ON CONFLICT (account_id, container_id, path_key) DO UPDATE SET path = excluded.path,
                item_count = excluded.item_count),
        drafts AS (DELETE FROM draft WHERE account_id = $1 AND container_id = $2 AND item_id = ANY($18::TEXT[])),
        draft_chunks AS (
            DELETE FROM draft_chunk WHERE account_id = $1 AND container_id = $2 AND item_id = ANY($18::TEXT[])),
        changes AS (
            INSERT INTO change (account_id, container_id, sequence, body)
            SELECT $1, $2, $19::BIGINT + ordinality, body FROM unnest($20::TEXT[]) WITH ORDINALITY AS entry(body, ordinality)),
        feed AS (
            UPDATE container SET feed_sequence = $21::BIGINT
            WHERE account_id = $1 AND container_id = $2 AND feed_sequence <> $21::BIGINT)
        SELECT 1
        """

    var container: ContainerKey
    var items = Items()
    var versions = Versions()
    var emptiedFolders: [String] = []
    var folders = Folders()
    var endedDrafts: [String] = []
    /// The feed's sequence before ``changes`` (the entries take the numbers after it) and after them.
    var feedBefore: Int64 = 0
    var feedAfter: Int64 = 0
    var changes: [String] = []

    struct Items {
        var ids: [String] = []
        var paths: [String] = []
        var pathKeys: [String] = []
        var kinds: [String] = []
        /// The current version's id, or an empty string for none.
        var currentVersions: [String] = []
        var isDeleted: [Bool] = []
    }

    struct Versions {
        var ids: [String] = []
        var items: [String] = []
        var records: [String] = []
        /// The chunks new versions use: `referencing[i]` uses `hashes[i]`.
        var referencing: [String] = []
        var hashes: [String] = []
    }

    struct Folders {
        var pathKeys: [String] = []
        var paths: [String] = []
        var counts: [Int64] = []
    }

    /// Whether the statement would write nothing.
    var isEmpty: Bool {
        items.ids.isEmpty && versions.ids.isEmpty && emptiedFolders.isEmpty && folders.pathKeys.isEmpty
            && endedDrafts.isEmpty && changes.isEmpty
    }

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 21)
        bindings.append(container.account.string)
        bindings.append(container.container.string)
        bindings.append(items.ids)
        bindings.append(items.paths)
        bindings.append(items.pathKeys)
        bindings.append(items.kinds)
        bindings.append(items.currentVersions)
        bindings.append(items.isDeleted)
        bindings.append(versions.ids)
        bindings.append(versions.items)
        bindings.append(versions.records)
        bindings.append(versions.referencing)
        bindings.append(versions.hashes)
        bindings.append(emptiedFolders)
        bindings.append(folders.pathKeys)
        bindings.append(folders.paths)
        bindings.append(folders.counts)
        bindings.append(endedDrafts)
        bindings.append(feedBefore)
        bindings.append(changes)
        bindings.append(feedAfter)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}
