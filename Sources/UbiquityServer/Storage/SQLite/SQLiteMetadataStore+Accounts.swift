import Foundation
import GRDB
import UbiquityProtocol

extension SQLiteMetadataStore {
    public func createAccount(name: String, passwordHash: String, quotaBytes: Int64?) async throws -> AccountRecord {
        let account = AccountRecord(
            id: AccountID(), name: name, passwordHash: passwordHash, quotaBytes: quotaBytes,
            createdAt: Self.date(Self.microseconds(clock())))
        try await committer.write { db in
            let key = AccountRecord.nameKey(name)
            if try db.fetchOne(Bool.self, sql: "SELECT 1 FROM account WHERE name_key = ?", arguments: [key]) != nil {
                throw ProtocolError(.accountExists, "an account named \"\(name)\" exists already")
            }
            try db.run(
                sql: """
                    INSERT INTO account (id, name, name_key, password_hash, quota_bytes, created_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    account.id.string, name, key, passwordHash, quotaBytes, Self.microseconds(account.createdAt),
                ])
        }
        return account
    }

    public func account(named name: String) async throws -> AccountRecord? {
        try await pool.read { db in
            try db.fetchRow(
                sql: "SELECT * FROM account WHERE name_key = ?", arguments: [AccountRecord.nameKey(name)]
            )
            .map(Self.account(from:))
        }
    }

    public func account(id: AccountID) async throws -> AccountRecord? {
        try await pool.read { db in
            try db.fetchRow(sql: "SELECT * FROM account WHERE id = ?", arguments: [id.string])
                .map(Self.account(from:))
        }
    }

    public func setQuota(_ bytes: Int64?, of account: AccountID) async throws {
        try await committer.write { db in
            try db.run(sql: "UPDATE account SET quota_bytes = ? WHERE id = ?", arguments: [bytes, account.string])
        }
    }

    public func insertToken(_ token: DeviceTokenRecord) async throws {
        let containers = try token.info.containers.map { try Self.encode($0) }
        try await committer.write { db in
            try db.run(
                sql: """
                    INSERT INTO device_token (id, account_id, secret_hash, device_id, device_name, containers,
                        created_at, revoked_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    token.info.id.uuidString.lowercased(), token.info.accountID.string, Data(token.secretHash),
                    token.info.device.id.string, token.info.device.name, containers,
                    Self.microseconds(token.info.createdAt), token.info.revokedAt.map(Self.microseconds),
                ])
        }
    }

    public func token(secretHash: [UInt8]) async throws -> DeviceTokenRecord? {
        try await pool.read { db in
            try db.fetchRow(sql: "SELECT * FROM device_token WHERE secret_hash = ?", arguments: [Data(secretHash)])
                .map(Self.token(from:))
        }
    }

    public func tokens(of account: AccountID) async throws -> [DeviceTokenRecord] {
        try await pool.read { db in
            try db.fetchRows(
                sql: "SELECT * FROM device_token WHERE account_id = ? ORDER BY created_at, id",
                arguments: [account.string]
            ).map(Self.token(from:))
        }
    }

    public func revokeToken(_ id: UUID, of account: AccountID, at date: Date) async throws -> Bool {
        try await committer.write { db in
            let exists =
                try db.fetchOne(
                    Bool.self, sql: "SELECT 1 FROM device_token WHERE id = ? AND account_id = ?",
                    arguments: [id.uuidString.lowercased(), account.string]) != nil
            guard exists else { return false }
            try db.run(
                sql: "UPDATE device_token SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                arguments: [Self.microseconds(date), id.uuidString.lowercased()])
            return true
        }
    }

    static func account(from row: Row) throws -> AccountRecord {
        AccountRecord(
            id: try AccountID(row["id"]), name: row["name"], passwordHash: row["password_hash"],
            quotaBytes: row["quota_bytes"], usedBytes: row["used_bytes"], createdAt: date(row["created_at"]))
    }

    static func token(from row: Row) throws -> DeviceTokenRecord {
        let containers: String? = row["containers"]
        let secret: Data = row["secret_hash"]
        let info = TokenInfo(
            id: UUID(uuidString: row["id"])!, accountID: try AccountID(row["account_id"]),
            device: SavingDevice(id: try DeviceID(row["device_id"]), name: row["device_name"]),
            containers: try containers.map { try decode([ContainerID].self, $0) }, createdAt: date(row["created_at"]),
            revokedAt: (row["revoked_at"] as Int64?).map(date))
        return DeviceTokenRecord(info: info, secretHash: Array(secret))
    }
}
