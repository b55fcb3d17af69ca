import Foundation
import UbiquityProtocol

extension ContainerSync {
    /// Changes the item's versions one step at a time, as `FileVersion`'s `replaceItem`, `isResolved` and `remove()`
    /// do: each operation is checked against the versions the engine knows, queued durably, and sent in order — at
    /// once when the service is reachable, later otherwise — so every device sees it.
    /// - Throws: ``ProtocolError/Code/itemNotFound`` for a path the engine does not know;
    ///   ``ProtocolError/Code/unknownVersion`` for a version that is not one of the item's other versions (or, for
    ///   ``VersionOperation/markResolved(_:)``, not a conflict version). Nothing is queued then.
    public func changeVersions(of path: ItemPath, _ operations: [VersionOperation]) async throws {
        guard let item = try state.item(at: path) else {
            throw ProtocolError(.itemNotFound, "no item at \(path) in container \(container)")
        }
        let others = Dictionary(try state.otherVersions(of: item.id).map { ($0.id, $0) }) { first, _ in first }
        for operation in operations {
            switch operation {
            case .replaceCurrent(let id), .remove(let id):
                guard others[id] != nil else {
                    throw ProtocolError(.unknownVersion, "\(id) is not one of the other versions of \(path)")
                }
            case .markResolved(let id):
                guard others[id]?.isConflict == true else {
                    throw ProtocolError(.unknownVersion, "\(id) is not a conflict version of \(path)")
                }
            }
        }
        try state.enqueue(operations, of: item.id)
        do {
            try await sendQueuedOperations()
            try await refresh(item.id)
        } catch is ProtocolError {
            return  // the service refused or failed: what it refused for good is dropped, the rest stays queued
        } catch {
            return  // unreachable: sent when the service is back
        }
    }
}
