import Foundation
import Synchronization
import UbiquityProtocol

/// Something the engine did to an item, told to whoever listens (``ContainerSync/events()``, the engine's socket):
/// the app-facing APIs turn these into query updates, progress and presenter messages.
public enum SyncEvent: Hashable, Sendable, Codable {
    /// The engine's record of the item changed: it appeared (a placeholder, say), its content landed, it moved, its
    /// conflicts or errors changed.
    case itemChanged(LocalItem)
    /// The item is gone from the container.
    case itemRemoved(ItemID, ItemPath)
    /// Bytes of the item's content moved; `nil` transfer: the transfer ended.
    case progress(ItemID, ItemPath, ItemTransfer?)
    /// The item gained a version other than its current one (a conflict version, usually).
    case versionGained(ItemID, ItemPath, VersionRecord)
    /// A version other than the current one went away.
    case versionLost(ItemID, ItemPath, VersionRecord)
    /// A conflict version was marked resolved.
    case versionResolved(ItemID, ItemPath, VersionRecord)
    /// Keys of the container's key-value store changed, and why.
    case keyValuesChanged([String], KeyValueChangeReason)
    /// A sync round ended: everything it found went up and everything the service had came down (`nil`), or it
    /// failed, and why (the service unreachable, say; what it did not finish waits for the next round).
    case roundEnded(failure: String?)
    /// The push connection to the service came up (`connected`), or went down and why: while it is down, changes
    /// made elsewhere arrive with the next poll instead of at once. Told when the state changes (a new reason while
    /// down is told too), not at every try to reconnect.
    case pushChanged(connected: Bool, reason: String?)
}

/// An upload or download of one item's content under way.
public struct ItemTransfer: Hashable, Sendable, Codable {
    /// Which way the content moves.
    public enum Direction: String, Hashable, Sendable, Codable {
        case upload, download
    }

    /// Which way the content moves.
    public var direction: Direction
    /// Bytes done so far (content already here or on the service counts as done).
    public var completed: Int64
    /// Bytes in all.
    public var total: Int64

    /// Creates a transfer record.
    public init(direction: Direction, completed: Int64, total: Int64) {
        self.direction = direction
        self.completed = completed
        self.total = total
    }

    /// Percent done, 0 to 100 (100 for empty content), as Apple's percent-downloaded and percent-uploaded keys.
    public var percentDone: Double {
        total <= 0 ? 100 : min(100, Double(completed) * 100 / Double(total))
    }
}

/// Hands every event to every listener; listeners come and go.
final class SyncEventHub: Sendable {
    private let listeners = Mutex<[UUID: AsyncStream<SyncEvent>.Continuation]>([:])

    func stream() -> AsyncStream<SyncEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncEvent.self, bufferingPolicy: .bufferingNewest(4096))
        let id = UUID()
        listeners.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.listeners.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    func send(_ event: SyncEvent) {
        for continuation in listeners.withLock({ Array($0.values) }) { continuation.yield(event) }
    }
}
