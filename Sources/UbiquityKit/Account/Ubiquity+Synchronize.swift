import Foundation
import SyncEngine

extension Ubiquity {
    /// Runs a sync round of the container now — this device's changes go up, the service's come down — and returns
    /// once it is over and what it changed is visible to queries and resource values.
    ///
    /// Apple's iCloud has no such call: its daemon syncs when it sees fit, and so does the engine here. A process
    /// that lives only for a moment — a command-line tool — calls it after its last save so that what it wrote has
    /// left the machine before it exits, and before its first read to see the other devices' latest changes.
    /// - Parameter containerIdentifier: The container, or `nil` for the app's first one.
    /// - Throws: ``UbiquityError/Code/notSignedIn``, ``UbiquityError/Code/unknownContainer``, or the service's
    ///   error (such as being unreachable).
    public func synchronize(containerIdentifier: String? = nil) async throws {
        guard let container = container(containerIdentifier) else {
            throw UbiquityError(
                .unknownContainer,
                "\(containerIdentifier ?? "the default container") is not one of the app's containers")
        }
        let session = try await session(for: container)
        try await session.synchronize()
    }
}
