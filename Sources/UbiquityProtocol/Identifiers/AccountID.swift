import Foundation

/// The identity of an account on the service.
public struct AccountID: UUIDIdentifier {
    /// The UUID underneath.
    public let uuid: UUID

    /// Wraps a UUID.
    public init(uuid: UUID) { self.uuid = uuid }
}
