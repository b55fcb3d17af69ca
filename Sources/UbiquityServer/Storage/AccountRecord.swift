import Foundation
import UbiquityProtocol

/// An account as the service stores it.
public struct AccountRecord: Hashable, Sendable {
    /// The account's identity.
    public var id: AccountID
    /// The name it logs in with, as written when it was made.
    public var name: String
    /// The bcrypt hash of its password.
    public var passwordHash: String
    /// The storage quota in content bytes; `nil` when unlimited.
    public var quotaBytes: Int64?
    /// The content bytes stored, each chunk counted once.
    public var usedBytes: Int64
    /// When it was made.
    public var createdAt: Date

    /// Creates a record.
    public init(
        id: AccountID, name: String, passwordHash: String, quotaBytes: Int64?, usedBytes: Int64 = 0,
        createdAt: Date
    ) {
        self.id = id
        self.name = name
        self.passwordHash = passwordHash
        self.quotaBytes = quotaBytes
        self.usedBytes = usedBytes
        self.createdAt = createdAt
    }

    /// The key account names are unique by: NFC, case-folded.
    public static func nameKey(_ name: String) -> String {
        name.precomposedStringWithCanonicalMapping.folding(options: [.caseInsensitive], locale: nil)
    }
}

/// A device token as the service stores it: the secret only as its SHA-256.
public struct DeviceTokenRecord: Hashable, Sendable {
    /// What the token is.
    public var info: TokenInfo
    /// The SHA-256 of the secret.
    public var secretHash: [UInt8]

    /// Creates a record.
    public init(info: TokenInfo, secretHash: [UInt8]) {
        self.info = info
        self.secretHash = secretHash
    }

    /// Whether the token may use `container`.
    public func permits(_ container: ContainerID) -> Bool {
        info.containers.map { $0.contains(container) } ?? true
    }
}
