import Foundation
import ServiceLifecycle
import UbiquityProtocol

/// What one node tells the other nodes sharing its database after a change is committed.
public enum ClusterEvent: Codable, Sendable, Equatable {
    /// A container's feed moved to `token`.
    case changed(account: AccountID, container: ContainerID, token: ChangeToken)
    /// A container's key-value store moved to `token`.
    case keyValueChanged(account: AccountID, container: ContainerID, token: ChangeToken)
    /// A device token was revoked.
    case tokenRevoked(UUID)
    /// The draft of `version` of `item` grew to `count` chunks.
    case draftGrew(account: AccountID, container: ContainerID, item: ItemID, version: VersionID, count: Int)
}

/// What a node hears from the others.
public enum ClusterSignal: Sendable, Equatable {
    /// Another node's event.
    case event(ClusterEvent)
    /// The node may have missed events (it listens again after losing its connection): what it caches is to be
    /// dropped and its push subscribers told where their containers' feeds are now.
    case resynchronize
    /// The node began to hear the others: tokens it checked before (a revocation said meanwhile was not heard) are
    /// to be checked again. (Push connections are rarely open yet; one that is learns of later changes as usual.)
    case listening
}

/// How the nodes of one deployment tell each other of changes, so that each can push to its own subscribers and
/// drop what it caches. A hint only: the feed is the truth, and a device that misses one still catches up from it.
public protocol ClusterBus: Sendable {
    /// Sends `event` to the other nodes, after the change it reports was committed; never waits for them.
    func announce(_ event: ClusterEvent)
    /// Hears the other nodes until the calling task is cancelled: `handler` gets each of their events, and
    /// ``ClusterSignal/resynchronize`` whenever events may have been missed.
    func listen(_ handler: @escaping @Sendable (ClusterSignal) async -> Void) async
    /// Where the feeds and key-value stores of `containers` are now (what subscribers are told after a
    /// ``ClusterSignal/resynchronize``).
    func positions(of containers: [ContainerKey]) async throws
        -> [ContainerKey: (changes: ChangeToken, keyValues: ChangeToken)]
}

/// A node's hearing of the other nodes, as a service of its application: it listens while the application runs and
/// stops with it, so a stopped service keeps no connection open for it.
struct ClusterListening: Service {
    let bus: any ClusterBus
    let handler: @Sendable (ClusterSignal) async -> Void

    func run() async throws {
        await cancelWhenGracefulShutdown { await bus.listen(handler) }
    }
}
