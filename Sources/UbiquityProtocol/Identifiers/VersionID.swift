import Foundation

/// The identity of one version of an item's content.
public struct VersionID: UUIDIdentifier {
    /// The UUID underneath.
    public let uuid: UUID

    /// Wraps a UUID.
    public init(uuid: UUID) { self.uuid = uuid }
}
