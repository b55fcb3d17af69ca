import PostgresNIO
import UbiquityProtocol

extension PostgresMetadataStore {
    public func missingChunks(_ hashes: [ChunkHash], of account: AccountID) async throws -> [ChunkHash] {
        try await read { db in try await Self.missing(hashes, of: account, in: db) }
    }

    public func chunkSizes(_ hashes: [ChunkHash], of account: AccountID) async throws -> [ChunkHash: Int64] {
        guard !hashes.isEmpty else { return [:] }
        return try await read { db in try await Self.sizes(of: hashes, of: account, in: db) }
    }

    /// The sizes of the account's chunks among `hashes`, by hash. (Each looked up on its own, for the reason
    /// ``PostgresItemWork`` gives.)
    static func sizes(of hashes: [ChunkHash], of account: AccountID, in db: PostgresTransaction) async throws
        -> [ChunkHash: Int64]
    {
        let unique = Array(Set(hashes.map(\.string)))
        var sizes: [ChunkHash: Int64] = [:]
        for (hash, size) in try await db.rows(
            """
            SELECT found.hash, found.size FROM unnest(\(unique)) AS wanted(hash) CROSS JOIN LATERAL (
                SELECT hash, size FROM chunk WHERE account_id = \(account.string) AND hash = wanted.hash OFFSET 0)
                AS found
            """, as: (String, Int64).self)
        {
            sizes[try ChunkHash(hash)] = size
        }
        return sizes
    }

    public func addChunks(_ chunks: [ChunkReference], to account: AccountID) async throws -> [ChunkAddition] {
        guard !chunks.isEmpty else { return [] }
        return try await write(retryingUniqueViolations: true) { db in
            guard
                let (quota, usedBefore) = try await db.row(
                    "SELECT quota_bytes, used_bytes FROM account WHERE id = \(account.string) FOR UPDATE",
                    as: (Int64?, Int64).self)
            else { throw ProtocolError(.unauthorized, "the account no longer exists") }
            var used = usedBefore
            var recorded = Set(try await Self.sizes(of: chunks.map(\.hash), of: account, in: db).keys)
            var outcomes: [ChunkAddition] = []
            var added: [ChunkReference] = []
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
                recorded.insert(chunk.hash)
                used += chunk.size
                added.append(chunk)
                outcomes.append(.added)
            }
            if !added.isEmpty {
                try await db.run(
                    """
                    INSERT INTO chunk (account_id, hash, size)
                    SELECT \(account.string), * FROM unnest(\(added.map(\.hash.string)), \(added.map(\.size)))
                    """)
                try await db.run("UPDATE account SET used_bytes = \(used) WHERE id = \(account.string)")
            }
            return outcomes
        }
    }

    /// Which of `hashes` the account lacks, each once, in the order given.
    static func missing(_ hashes: [ChunkHash], of account: AccountID, in db: PostgresTransaction) async throws
        -> [ChunkHash]
    {
        var seen: Set<ChunkHash> = []
        let unique = hashes.filter { seen.insert($0).inserted }
        guard !unique.isEmpty else { return [] }
        let present = Set(
            try await db.values(
                """
                SELECT found.hash FROM unnest(\(unique.map(\.string))) AS wanted(hash) CROSS JOIN LATERAL (
                    SELECT hash FROM chunk WHERE account_id = \(account.string) AND hash = wanted.hash OFFSET 0)
                    AS found
                """, as: String.self))
        return unique.filter { !present.contains($0.string) }
    }
}
