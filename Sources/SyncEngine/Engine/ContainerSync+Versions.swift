import Foundation
import UbiquityProtocol

extension ContainerSync {
    /// The kept versions of the item at `path` (current, conflict and history), newest first, as the service has
    /// them.
    /// - Throws: ``ProtocolError/Code/itemNotFound`` for a path the engine does not know.
    public func versions(of path: ItemPath) async throws -> (current: VersionID?, versions: [VersionRecord]) {
        let item = try known(path)
        let detail = try await client.item(item.id, in: container)
        return (detail.item.currentVersion, detail.versions)
    }

    /// Resolves the item's conflicts the way the seeds do, on the service, so every device sees it: make `keep`
    /// current when it is not already (replace), mark every conflict version resolved, remove the other versions —
    /// then bring the local copy to the kept version.
    /// - Parameter keep: The version to keep; `nil` keeps the current one.
    /// - Throws: ``ProtocolError/Code/itemNotFound`` or ``ProtocolError/Code/unknownVersion``; the service's errors.
    public func resolve(_ path: ItemPath, keeping keep: VersionID? = nil) async throws {
        let item = try known(path)
        var detail = try await client.item(item.id, in: container)
        let chosen = keep ?? detail.item.currentVersion
        guard let chosen, detail.versions.contains(where: { $0.id == chosen }) else {
            throw ProtocolError(
                .unknownVersion, "\(keep?.description ?? "no current version") is not a version of \(path)")
        }
        if detail.item.currentVersion != chosen {
            _ = try await client.replaceCurrent(with: chosen, of: item.id, in: container)
        }
        for version in detail.versions where version.isConflict && !version.isResolved && version.id != chosen {
            _ = try await client.markResolved(version.id, of: item.id, in: container)
        }
        for version in detail.versions where version.id != chosen {
            _ = try await client.removeVersion(version.id, of: item.id, in: container)
        }
        detail = try await client.item(item.id, in: container)
        try await apply(detail, force: false)
    }

    private func known(_ path: ItemPath) throws -> LocalItem {
        guard let item = try state.item(at: path) else {
            throw ProtocolError(.itemNotFound, "no item at \(path) in container \(container)")
        }
        return item
    }
}
