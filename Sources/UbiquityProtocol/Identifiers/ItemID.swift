import Foundation

/// The identity of an item (a file, package or folder) in a container; stable across renames and moves.
public struct ItemID: UUIDIdentifier {
    /// The UUID underneath.
    public let uuid: UUID

    /// Wraps a UUID.
    public init(uuid: UUID) { self.uuid = uuid }
}
