import SyncEngine

/// The signed-in account, as `FileManager.ubiquityIdentityToken` gives it: opaque, equal for the same account of
/// the same service, different for any other, and saying nothing of the account's name. Keep it (it is `Codable`)
/// to notice at the next launch that the account changed.
public struct UbiquityIdentityToken: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The opaque value.
    public let value: String

    /// The token of `account` on `server`.
    public init(server: String, account: String) {
        value = ContainerLayout.accountKey(server: server, account: account)
    }

    public var description: String { "UbiquityIdentityToken(\(value.prefix(8))…)" }
}
