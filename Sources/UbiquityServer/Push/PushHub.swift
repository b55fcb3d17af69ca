import Synchronization
import UbiquityProtocol

/// Fans container news out to the push connections subscribed to it.
///
/// Each connection has a buffered stream of ``PushMessage``s; publishing only enqueues (it never waits for a slow
/// client), and a connection that falls behind keeps the newest messages — each names a position, so the latest
/// is all a device needs to catch up.
public final class PushHub: Sendable {
    /// A connection's handle in the hub.
    public struct Connection: Hashable, Sendable {
        let id: Int
        let account: AccountID
    }

    private struct State {
        var nextID = 0
        var outputs: [Int: AsyncStream<PushMessage>.Continuation] = [:]
        var subscriptions: [Int: Set<ContainerKey>] = [:]
        var subscribers: [ContainerKey: Set<Int>] = [:]
        /// The connections that asked for drafts too.
        var draftFollowers: Set<Int> = []
    }

    private let state = Mutex(State())

    /// Creates an empty hub.
    public init() {}

    /// The number of open connections.
    public var connectionCount: Int { state.withLock { $0.outputs.count } }

    /// How many connections are subscribed to a container of this identifier, in any account.
    public func subscriberCount(to container: ContainerID) -> Int {
        state.withLock { state in
            state.subscribers.reduce(0) { $0 + ($1.key.container == container ? $1.value.count : 0) }
        }
    }

    /// The containers some connection is subscribed to.
    public var subscribedContainers: [ContainerKey] {
        state.withLock { Array($0.subscribers.filter { !$0.value.isEmpty }.keys) }
    }

    /// Registers a connection of `account`; its messages arrive on the returned stream.
    public func connect(account: AccountID) -> (Connection, AsyncStream<PushMessage>) {
        let (stream, continuation) = AsyncStream.makeStream(
            of: PushMessage.self, bufferingPolicy: .bufferingNewest(256))
        let id = state.withLock { state in
            state.nextID += 1
            state.outputs[state.nextID] = continuation
            return state.nextID
        }
        return (Connection(id: id, account: account), stream)
    }

    /// Replaces the connection's subscription with `containers` (of its own account), with their drafts or not.
    public func subscribe(_ connection: Connection, to containers: [ContainerID], drafts: Bool = false) {
        let keys = Set(containers.map { ContainerKey(account: connection.account, container: $0) })
        state.withLock { state in
            for key in state.subscriptions[connection.id] ?? [] { state.subscribers[key]?.remove(connection.id) }
            state.subscriptions[connection.id] = keys
            for key in keys { state.subscribers[key, default: []].insert(connection.id) }
            if drafts {
                state.draftFollowers.insert(connection.id)
            } else {
                state.draftFollowers.remove(connection.id)
            }
        }
    }

    /// Sends `message` to the connection alone.
    public func send(_ message: PushMessage, to connection: Connection) {
        _ = state.withLock { $0.outputs[connection.id] }?.yield(message)
    }

    /// Sends `message` to every connection subscribed to `container`.
    public func publish(_ message: PushMessage, to container: ContainerKey) {
        let outputs = state.withLock { state in
            (state.subscribers[container] ?? []).compactMap { state.outputs[$0] }
        }
        for output in outputs { output.yield(message) }
    }

    /// Sends `message` (a ``PushMessage/draft(container:item:version:count:)``) to every connection subscribed to
    /// `container` with drafts.
    public func publishDraft(_ message: PushMessage, to container: ContainerKey) {
        let outputs = state.withLock { state in
            (state.subscribers[container] ?? []).filter { state.draftFollowers.contains($0) }.compactMap {
                state.outputs[$0]
            }
        }
        for output in outputs { output.yield(message) }
    }

    /// Removes the connection and ends its stream.
    public func disconnect(_ connection: Connection) {
        let output = state.withLock { state in
            for key in state.subscriptions[connection.id] ?? [] {
                state.subscribers[key]?.remove(connection.id)
                if state.subscribers[key]?.isEmpty == true { state.subscribers[key] = nil }
            }
            state.subscriptions[connection.id] = nil
            state.draftFollowers.remove(connection.id)
            return state.outputs.removeValue(forKey: connection.id)
        }
        output?.finish()
    }
}
