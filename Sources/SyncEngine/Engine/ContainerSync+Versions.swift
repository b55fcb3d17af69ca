import Foundation
import UbiquityProtocol

extension ContainerSync {
    /// The kept versions of the item at `path` (current, conflict and history), newest first, as the service has
    /// them.
    /// - Throws: ``ProtocolError/Code/itemNotFound`` for a path the engine does not know.
    public func versions(of path: ItemPath) async throws -> (current: VersionID?, versions: [VersionRecord]) {
        let item = try known(path)
        let detail = try await detail(of: item.id)
        return (detail.item.currentVersion, detail.versions)
    }

    /// The versions of the item at `path` other than its current one (conflict and history), newest first, as the
    /// engine last heard them — no request to the service, so it answers offline too.
    /// - Throws: ``ProtocolError/Code/itemNotFound`` for a path the engine does not know.
    public func otherVersions(of path: ItemPath) throws -> [VersionRecord] {
        try state.otherVersions(of: try known(path).id)
    }

    /// Resolves the item's conflicts the way the seeds do, on the service, so every device sees it: make `keep`
    /// current when it is not already (replace), mark every conflict version resolved, remove the other versions —
    /// then bring the local copy to the kept version.
    ///
    /// The three steps are queued durably first and sent in order: with the service unreachable the call still
    /// succeeds, and the steps go out when it is back (before any other change of that round).
    /// - Parameter keep: The version to keep; `nil` keeps the current one.
    /// - Throws: ``ProtocolError/Code/itemNotFound`` or ``ProtocolError/Code/unknownVersion``; the service's errors.
    public func resolve(_ path: ItemPath, keeping keep: VersionID? = nil) async throws {
        let item = try known(path)
        var current = item.serverVersion
        var versions = try state.otherVersions(of: item.id)
        var online = true
        do {
            let detail = try await detail(of: item.id)
            current = detail.item.currentVersion
            versions = detail.versions.filter { $0.id != current }
        } catch let error as ProtocolError {
            throw error  // the service answered: its refusal (item not found, unauthorized) stands
        } catch {
            online = false  // unreachable: decide on what was last heard, send later
        }
        let chosen = keep ?? current
        guard let chosen, chosen == current || versions.contains(where: { $0.id == chosen }) else {
            throw ProtocolError(
                .unknownVersion, "\(keep?.description ?? "no current version") is not a version of \(path)")
        }
        var operations: [VersionOperation] = []
        if let current, current != chosen { operations.append(.replaceCurrent(chosen)) }
        for version in versions where version.isConflict && !version.isResolved && version.id != chosen {
            operations.append(.markResolved(version.id))
        }
        for version in versions where version.id != chosen { operations.append(.remove(version.id)) }
        if let current, current != chosen { operations.append(.remove(current)) }
        try state.enqueue(operations, of: item.id)
        guard online else { return }
        do {
            try await sendQueuedOperations()
        } catch is ProtocolError {
            throw ProtocolError(.internalError, "the service failed while resolving \(path)")
        } catch {
            return  // queued; sent when the service is back
        }
        try await refresh(item.id)
    }

    /// Sends the queued operations on versions, oldest first; one the service refuses for good (the version is
    /// gone, say, because another device resolved first) is dropped. An unreachable service leaves the rest queued.
    func sendQueuedOperations() async throws {
        while let (sequence, id, operation) = try state.nextQueuedOperation() {
            do {
                switch operation {
                case .replaceCurrent(let version):
                    _ = try await service.replaceCurrent(with: version, of: id, in: container)
                case .markResolved(let version): _ = try await service.markResolved(version, of: id, in: container)
                case .remove(let version): _ = try await service.removeVersion(version, of: id, in: container)
                }
            } catch let error as ProtocolError where error.code != .internalError {
                logger.notice("a queued version change no longer applies", metadata: ["error": "\(error)"])
                try state.dequeue(sequence)
                continue
            }
            try state.dequeue(sequence, applying: operation, to: id)
        }
    }
}
