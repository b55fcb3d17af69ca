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
        let unique = Array(Set(hashes))
        var sizes: [ChunkHash: Int64] = [:]
        for start in stride(from: 0, to: unique.count, by: 500) {
            let batch = unique[start..<min(start + 500, unique.count)]
            let marks = Array(repeating: "?", count: batch.count).joined(separator: ",")
            let rows = try Row.fetchAll(
                db, sql: "SELECT hash, size FROM chunk WHERE account_id = ? AND hash IN (\(marks))",
                arguments: StatementArguments([account.string] + batch.map(\.string)))
            for row in rows { sizes[try ChunkHash(row["hash"] as String)] = row["size"] }
        }
        return sizes
    }

    public func addChunks(_ chunks: [ChunkReference], to account: AccountID) async throws -> [ChunkAddition] {
        guard !chunks.isEmpty else { return [] }
        return try await committer.write { db in
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
    }

    /// Which of `hashes` the account lacks, each once, in the order given.
    static func missing(_ hashes: [ChunkHash], of account: AccountID, in db: Database) throws -> [ChunkHash] {
        var seen: Set<ChunkHash> = []
        let unique = hashes.filter { seen.insert($0).inserted }
        var present: Set<String> = []
        for start in stride(from: 0, to: unique.count, by: 500) {
            let batch = unique[start..<min(start + 500, unique.count)]
            let marks = Array(repeating: "?", count: batch.count).joined(separator: ",")
            let arguments = StatementArguments([account.string] + batch.map(\.string))
            present.formUnion(
                try db.fetchAll(
                    String.self, sql: "SELECT hash FROM chunk WHERE account_id = ? AND hash IN (\(marks))",
                    arguments: arguments))
        }
        return unique.filter { !present.contains($0.string) }
    }
}
