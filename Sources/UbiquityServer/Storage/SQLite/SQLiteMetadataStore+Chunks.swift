import GRDB
import UbiquityProtocol

extension SQLiteMetadataStore {
    public func missingChunks(_ hashes: [ChunkHash], of account: AccountID) async throws -> [ChunkHash] {
        try await pool.read { db in try Self.missing(hashes, of: account, in: db) }
    }

    public func chunkSizes(_ hashes: [ChunkHash], of account: AccountID) async throws -> [ChunkHash: Int64] {
        guard !hashes.isEmpty else { return [:] }
        return try await pool.read { db in try Self.sizes(of: hashes, of: account, in: db) }
    }

    /// The sizes of the account's chunks among `hashes`, by hash.
    static func sizes(of hashes: [ChunkHash], of account: AccountID, in db: Database) throws -> [ChunkHash: Int64] {
        var sizes: [ChunkHash: Int64] = [:]
        for hash in Set(hashes) {
            if let size = try size(of: hash, of: account, in: db) { sizes[hash] = size }
        }
        return sizes
    }

    /// The size of the account's chunk `hash`, if it has it. One statement, prepared once per connection, for every
    /// look-up: a query naming a batch of hashes (`hash IN (?, ?, …)`) was prepared anew for each batch, since its
    /// text changes with the batch's length, and preparing cost more than the look-ups (a few percent of the CPU of
    /// many small files' sync).
    static func size(of hash: ChunkHash, of account: AccountID, in db: Database) throws -> Int64? {
        try db.fetchOne(
            Int64.self, sql: "SELECT size FROM chunk WHERE account_id = ? AND hash = ?",
            arguments: [account.string, hash.string])
    }

    public func addChunks(_ chunks: [ChunkReference], to account: AccountID) async throws -> [ChunkAddition] {
        guard !chunks.isEmpty else { return [] }
        return try await committer.write { db in try Self.add(chunks, to: account, in: db) }
    }

    /// Records `chunks` for the account in `db`'s transaction (``addChunks(_:to:)``).
    static func add(_ chunks: [ChunkReference], to account: AccountID, in db: Database) throws -> [ChunkAddition] {
        guard !chunks.isEmpty else { return [] }
        guard
            let row = try db.fetchRow(
                sql: "SELECT quota_bytes, used_bytes FROM account WHERE id = ?", arguments: [account.string])
        else { throw ProtocolError(.unauthorized, "the account no longer exists") }
        var used: Int64 = row["used_bytes"]
        let quota: Int64? = row["quota_bytes"]
        let sizes = try Self.sizes(of: chunks.map(\.hash), of: account, in: db)
        var recorded = Set(sizes.keys)
        var outcomes: [ChunkAddition] = []
        var added: Int64 = 0
        for chunk in chunks {
            guard !recorded.contains(chunk.hash) else {
                outcomes.append(.known)
                continue
            }
            if let quota, chunk.size > quota - used {
                outcomes.append(
                    .refused(
                        ProtocolError(
                            .quotaExceeded,
                            "storing \(chunk.size) more bytes would take the account over its \(quota)-byte "
                                + "quota (\(used) used)")))
                continue
            }
            try db.run(
                sql: "INSERT INTO chunk (account_id, hash, size) VALUES (?, ?, ?)",
                arguments: [account.string, chunk.hash.string, chunk.size])
            recorded.insert(chunk.hash)
            used += chunk.size
            added += chunk.size
            outcomes.append(.added)
        }
        if added > 0 {
            try db.run(
                sql: "UPDATE account SET used_bytes = used_bytes + ? WHERE id = ?",
                arguments: [added, account.string])
        }
        return outcomes
    }

    /// Which of `hashes` the account lacks, each once, in the order given.
    static func missing(_ hashes: [ChunkHash], of account: AccountID, in db: Database) throws -> [ChunkHash] {
        var seen: Set<ChunkHash> = []
        var missing: [ChunkHash] = []
        for hash in hashes where seen.insert(hash).inserted {
            if try size(of: hash, of: account, in: db) == nil { missing.append(hash) }
        }
        return missing
    }
}
