import Foundation

/// The identity of a device (one machine's sync engine) signed in to an account.
public struct DeviceID: UUIDIdentifier {
    /// The UUID underneath.
    public let uuid: UUID

    /// Wraps a UUID.
    public init(uuid: UUID) { self.uuid = uuid }
}
