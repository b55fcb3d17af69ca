import DocumentKit
import Foundation
import UbiquityProtocol

/// A change an app makes to an item's versions through `FileVersion`, as Apple's calls make it: at once on this
/// device, then on the service through the engine's queue.
public enum VersionChange: Hashable, Sendable, Codable {
    /// Make a kept version the current one (`replaceItem(at:)` on its own item).
    case replaceCurrent(VersionID)
    /// Remove a version other than the current one (`remove()`).
    case remove(VersionID)
    /// Mark a conflict version resolved (`isResolved = true`); nothing when it is not one of the item's any more.
    case markResolved(VersionID)
    /// Remove every version but the current one (`removeOtherVersionsOfItem(at:)`).
    case removeOthers
}

extension ContainerSync {
    /// Changes the versions of the item at `path` at once — the engine's records, read by every process at once — and
    /// queues the same operations for the service, sent by a round asked for now (or when the service is back). Tells
    /// listeners and this process's presenters what changed, by the rules the engine uses when it hears versions from
    /// the service; the engine, finding its records already so when it next hears the item, tells nobody again.
    ///
    /// Synchronous, as the `FileVersion` calls it serves are; the one writer of version records is the engine (an app
    /// using another process's engine asks it over its socket, ``EngineSocketClient/request(_:at:)``).
    /// - Parameter item: The item the caller means; a different item now at the path is not changed.
    /// - Throws: ``ProtocolError/Code/itemNotFound`` when no item, or another one, is at `path`;
    ///   ``ProtocolError/Code/unknownVersion`` for a version that is not one of the item's other versions.
    public nonisolated func changeVersionsNow(of path: ItemPath, item: ItemID, _ change: VersionChange) throws {
        let (before, after) = try state.changeVersionsLocally(ofItemAt: path) { state in
            guard state.item.id == item else {
                throw ProtocolError(.itemNotFound, "the item at \(path) is another one now")
            }
            switch change {
            case .replaceCurrent(let id): return [.replaceCurrent(id)]
            case .remove(let id): return [.remove(id)]
            case .markResolved(let id): return state.others.contains { $0.id == id } ? [.markResolved(id)] : []
            case .removeOthers: return (state.others.map(\.id) + state.replaced).map { .remove($0) }
            }
        }
        guard before != after else { return }
        let url = layout.url(of: path)
        for event in before.events(to: after) {
            switch event {
            case .versionLost(let id, _, let version):
                try? disk.removeItem(
                    at: layout.versions.appendingPathComponent(id.string, isDirectory: true).appendingPathComponent(
                        version.id.string, isDirectory: true))
                FileCoordinator.announce(.lost(Self.presented(version)), ofItemAt: url)
            case .versionResolved(_, _, let version):
                FileCoordinator.announce(.resolved(Self.presented(version)), ofItemAt: url)
            default: break
            }
            hub.send(event)
        }
        // A round sends the queue now instead of at the engine's next poll; offline it fails, and the engine's own
        // retries send the queue once the service is back.
        Task(executorPreference: configuration.taskExecutor) { try? await self.syncOnce(scanning: .paths([])) }
    }
}

extension LocalVersionState {
    /// What a change from `self` to `after` made on this device tells listeners, by the rules the engine uses when it
    /// hears versions from the service: a conflict version marked resolved or gone while unresolved is resolved; a
    /// version gone is lost (but one made current is not lost); then the item's new record.
    public func events(to after: LocalVersionState) -> [SyncEvent] {
        let (id, path) = (after.item.id, after.item.path)
        let remaining = Dictionary(after.others.map { ($0.id, $0) }) { first, _ in first }
        var events: [SyncEvent] = []
        for old in others where old.isConflict && !old.isResolved && remaining[old.id]?.isResolved != false {
            events.append(.versionResolved(id, path, remaining[old.id] ?? old))
        }
        for old in others where remaining[old.id] == nil && old.id != after.item.serverVersion {
            events.append(.versionLost(id, path, old))
        }
        events.append(.itemChanged(after.item))
        return events
    }
}
