import Foundation

/// `POST /v1/accounts` (when the operator enables open registration): a new account.
public struct RegisterRequest: Hashable, Sendable, Codable {
    /// The account's name, used to log in (compared case-insensitively).
    public var name: String
    /// The password (at least 8 characters; stored only as a bcrypt hash).
    public var password: String

    /// Creates a request.
    public init(name: String, password: String) {
        self.name = name
        self.password = password
    }
}

/// `POST /v1/login`: a device signs in and gets a bearer token.
public struct LoginRequest: Hashable, Sendable, Codable {
    /// The account's name.
    public var name: String
    /// The account's password.
    public var password: String
    /// The device's human name, shown as a version's "saving computer".
    public var deviceName: String
    /// The device's identity when it has signed in before; a new one is made otherwise.
    public var deviceID: DeviceID?
    /// The containers the token may use; `nil` for all of the account's containers.
    public var containers: [ContainerID]?

    /// Creates a request.
    public init(
        name: String, password: String, deviceName: String, deviceID: DeviceID? = nil,
        containers: [ContainerID]? = nil
    ) {
        self.name = name
        self.password = password
        self.deviceName = deviceName
        self.deviceID = deviceID
        self.containers = containers
    }
}

/// The answer to ``LoginRequest``: the bearer token (shown this once; the service keeps only its hash).
public struct LoginResponse: Hashable, Sendable, Codable {
    /// The secret to send as `Authorization: Bearer <token>`.
    public var token: String
    /// What the token is, as ``TokenInfo`` lists it.
    public var info: TokenInfo

    /// Creates a response.
    public init(token: String, info: TokenInfo) {
        self.token = token
        self.info = info
    }
}

/// A device token as `GET /v1/tokens` lists it; never carries the secret.
public struct TokenInfo: Hashable, Sendable, Codable {
    /// The token's id, used to revoke it (`DELETE /v1/tokens/{id}`).
    public var id: UUID
    /// The account it belongs to.
    public var accountID: AccountID
    /// The device it was issued to.
    public var device: SavingDevice
    /// The containers it may use; `nil` for all.
    public var containers: [ContainerID]?
    /// When it was issued.
    public var createdAt: Date
    /// When it was revoked; `nil` while it is valid.
    public var revokedAt: Date?

    /// Creates a description.
    public init(
        id: UUID, accountID: AccountID, device: SavingDevice, containers: [ContainerID]?, createdAt: Date,
        revokedAt: Date? = nil
    ) {
        self.id = id
        self.accountID = accountID
        self.device = device
        self.containers = containers
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// `GET /v1/account`: the signed-in account and its storage.
public struct AccountInfo: Hashable, Sendable, Codable {
    /// The account's identity (what a device's identity token is derived from).
    public var id: AccountID
    /// The account's name.
    public var name: String
    /// The storage quota in content bytes; `nil` when unlimited.
    public var quotaBytes: Int64?
    /// The content bytes stored, each chunk counted once.
    public var usedBytes: Int64

    /// Creates a description.
    public init(id: AccountID, name: String, quotaBytes: Int64?, usedBytes: Int64) {
        self.id = id
        self.name = name
        self.quotaBytes = quotaBytes
        self.usedBytes = usedBytes
    }
}
