import Foundation
import PostgresNIO
import UbiquityProtocol

extension PostgresMetadataStore {
    public func createAccount(name: String, passwordHash: String, quotaBytes: Int64?) async throws -> AccountRecord {
        let account = AccountRecord(
            id: AccountID(), name: name, passwordHash: passwordHash, quotaBytes: quotaBytes,
            createdAt: StoredForm.date(StoredForm.microseconds(clock())))
        let key = AccountRecord.nameKey(name)
        let created = StoredForm.microseconds(account.createdAt)
        let inserted = try await write { db in
            try await db.value(
                """
                INSERT INTO account (id, name, name_key, password_hash, quota_bytes, created_at)
                VALUES (\(account.id.string), \(name), \(key), \(passwordHash), \(quotaBytes), \(created))
                ON CONFLICT (name_key) DO NOTHING RETURNING id
                """, as: String.self)
        }
        guard inserted != nil else {
            throw ProtocolError(.accountExists, "an account named \"\(name)\" exists already")
        }
        return account
    }

    public func account(named name: String) async throws -> AccountRecord? {
        let key = AccountRecord.nameKey(name)
        return try await read { db in
            try await db.row(Self.accountQuery(where: "name_key", key), as: AccountRow.self).map(Self.account(from:))
        }
    }

    public func account(id: AccountID) async throws -> AccountRecord? {
        try await read { db in
            try await db.row(Self.accountQuery(where: "id", id.string), as: AccountRow.self).map(Self.account(from:))
        }
    }

    public func setQuota(_ bytes: Int64?, of account: AccountID) async throws {
        try await write { db in
            try await db.run("UPDATE account SET quota_bytes = \(bytes) WHERE id = \(account.string)")
        }
    }

    public func insertToken(_ token: DeviceTokenRecord) async throws {
        let info = token.info
        let containers = try info.containers.map { try StoredForm.encode($0) }
        let created = StoredForm.microseconds(info.createdAt)
        let revoked = info.revokedAt.map(StoredForm.microseconds)
        try await write { db in
            try await db.run(
                """
                INSERT INTO device_token (id, account_id, secret_hash, device_id, device_name, containers,
                    created_at, revoked_at)
                VALUES (\(info.id.uuidString.lowercased()), \(info.accountID.string), \(Data(token.secretHash)),
                    \(info.device.id.string), \(info.device.name), \(containers), \(created), \(revoked))
                """)
        }
    }

    public func token(secretHash: [UInt8]) async throws -> DeviceTokenRecord? {
        try await read { db in
            try await db.row(
                "SELECT \(unescaped: Self.tokenColumns) FROM device_token WHERE secret_hash = \(Data(secretHash))",
                as: TokenRow.self
            ).map(Self.token(from:))
        }
    }

    public func tokens(of account: AccountID) async throws -> [DeviceTokenRecord] {
        try await read { db in
            try await db.rows(
                """
                SELECT \(unescaped: Self.tokenColumns) FROM device_token WHERE account_id = \(account.string)
                ORDER BY created_at, id
                """, as: TokenRow.self
            ).map(Self.token(from:))
        }
    }

    public func revokeToken(_ id: UUID, of account: AccountID, at date: Date) async throws -> Bool {
        let tokenID = id.uuidString.lowercased()
        let revoked = StoredForm.microseconds(date)
        return try await write { db in
            guard
                try await db.value(
                    "SELECT 1 FROM device_token WHERE id = \(tokenID) AND account_id = \(account.string) FOR UPDATE",
                    as: Int.self) != nil
            else { return false }
            try await db.run(
                "UPDATE device_token SET revoked_at = \(revoked) WHERE id = \(tokenID) AND revoked_at IS NULL")
            return true
        }
    }

    typealias AccountRow = (String, String, String, Int64?, Int64, Int64)
    typealias TokenRow = (String, String, Data, String, String, String?, Int64, Int64?)

    static func accountQuery(where column: String, _ value: String) -> PostgresQuery {
        """
        SELECT id, name, password_hash, quota_bytes, used_bytes, created_at FROM account
        WHERE \(unescaped: column) = \(value)
        """
    }

    static let tokenColumns =
        "id, account_id, secret_hash, device_id, device_name, containers, created_at, revoked_at"

    static func account(from row: AccountRow) throws -> AccountRecord {
        AccountRecord(
            id: try AccountID(row.0), name: row.1, passwordHash: row.2, quotaBytes: row.3, usedBytes: row.4,
            createdAt: StoredForm.date(row.5))
    }

    static func token(from row: TokenRow) throws -> DeviceTokenRecord {
        guard let id = UUID(uuidString: row.0) else {
            throw ProtocolError(.internalError, "a stored token has a malformed id")
        }
        let info = TokenInfo(
            id: id, accountID: try AccountID(row.1), device: SavingDevice(id: try DeviceID(row.3), name: row.4),
            containers: try row.5.map { try StoredForm.decode([ContainerID].self, $0) },
            createdAt: StoredForm.date(row.6), revokedAt: row.7.map(StoredForm.date))
        return DeviceTokenRecord(info: info, secretHash: Array(row.2))
    }
}
