import UbiquityProtocol

/// One account's container: the unit of a change feed and a key-value store.
///
/// Two accounts may use the same container id; their containers have nothing in common.
public struct ContainerKey: Hashable, Sendable, CustomStringConvertible {
    /// The account that owns the container.
    public var account: AccountID
    /// The container's id.
    public var container: ContainerID

    /// Creates a key.
    public init(account: AccountID, container: ContainerID) {
        self.account = account
        self.container = container
    }

    public var description: String { "\(container) of account \(account)" }
}
