import Foundation
import Logging
import SyncEngine
import Synchronization
import UbiquityProtocol

/// The key-value store of one container of one ``Ubiquity`` instance as this process holds it: the values in
/// memory, the writes on their way to the engine, and the tasks keeping both in step with the engine. Every
/// ``UbiquitousKeyValueStore`` of the same instance and container shares one, so each sees every write at once.
///
/// Writes apply to memory at once and are queued; one writer hands them to the engine in order, merged into one
/// batch while the engine is busy with the previous one. Values read from the engine replace memory's, but for keys
/// written here that the engine had not taken when the read began.
final class KeyValueReplica: Sendable {
    struct State {
        /// The values, as the app sees them.
        var values: [String: PropertyListValue]
        /// The account whose values these are.
        var identity: UbiquityIdentityToken?
        /// Why the last refused write was refused.
        var lastError: KeyValueStoreError?
        /// The number of the latest write made here.
        var sequence: UInt64 = 0
        /// The latest write the engine has answered (taken or refused), or that was dropped.
        var delivered: UInt64 = 0
        /// Per key, its latest write here while the engine has not answered it.
        var written: [String: Mark] = [:]
        /// Writes the writer has not taken yet, merged (a key's later write replaces its earlier one).
        var outgoing: [String: Outgoing] = [:]
        /// Whether the writer holds a batch the engine has not answered yet.
        var sending = false
        /// Whether the writer is waiting for an engine it cannot reach (not started yet, or gone).
        var stalled = false
        /// Callers of ``flush()`` waiting.
        var flushing: [CheckedContinuation<Void, Never>] = []
        /// The stores that post this replica's changes.
        var stores: [WeakStore] = []
    }

    /// A write made here: its number and the account signed in when it was made.
    struct Mark {
        var sequence: UInt64
        var identity: UbiquityIdentityToken?
    }

    /// A queued write: the value (`nil`: a removal) and the account signed in when it was made, whose engine alone
    /// may take it.
    struct Outgoing {
        var value: PropertyListValue?
        var identity: UbiquityIdentityToken?
    }

    /// What the writer is told: writes wait in ``State/outgoing``, or a caller waits until every earlier write was
    /// answered.
    enum Signal: Sendable {
        case wake
        case barrier(CheckedContinuation<Void, Never>)
    }

    let ubiquity: Ubiquity
    let containerIdentifier: String?
    let state: Mutex<State>
    let broadcast = EventBroadcast<UbiquitousKeyValueStore.Change>()
    let limits = KeyValueLimits.apple
    let logger: Logger
    private let signals: AsyncStream<Signal>.Continuation
    private let tasks = Mutex<[Task<Void, Never>]>([])
    private let hooks = Mutex<(observer: (any NSObjectProtocol)?, closingWork: UUID?)>((nil, nil))

    private struct Key: Hashable {
        let ubiquity: ObjectIdentifier
        let container: String
    }

    private static let replicas = Mutex<[Key: WeakReplica]>([:])

    /// The replica of `ubiquity`'s container `identifier` (`nil`: its first), made the first time.
    static func shared(ubiquity: Ubiquity, container identifier: String?) -> KeyValueReplica {
        let key = Key(
            ubiquity: ObjectIdentifier(ubiquity), container: ubiquity.container(identifier)?.string ?? identifier ?? "")
        return replicas.withLock { replicas in
            if let replica = replicas[key]?.value, replica.ubiquity === ubiquity { return replica }
            replicas = replicas.filter { $0.value.value != nil }
            let replica = KeyValueReplica(ubiquity: ubiquity, containerIdentifier: identifier)
            replicas[key] = WeakReplica(replica)
            return replica
        }
    }

    /// Loads the values the engine's state database holds for the signed-in account (a short read on the calling
    /// thread, before any engine is reached), then starts the writer and the follower of the engine's events.
    private init(ubiquity: Ubiquity, containerIdentifier: String?) {
        self.ubiquity = ubiquity
        self.containerIdentifier = containerIdentifier
        logger = ubiquity.configuration.logger
        let identity = ubiquity.identityToken
        state = Mutex(
            State(
                values: Self.storedValues(of: identity, ubiquity: ubiquity, container: containerIdentifier),
                identity: identity))
        let (stream, continuation) = AsyncStream.makeStream(of: Signal.self)
        signals = continuation
        start(writing: stream)
        // An account change between the read above and the observer's start is taken now.
        if ubiquity.identityToken != identity { switchAccount() }
    }

    deinit {
        signals.finish()
        for task in tasks.withLock({ $0 }) { task.cancel() }
        let closingWork = hooks.withLock { hooks in
            if let observer = hooks.observer { NotificationCenter.default.removeObserver(observer) }
            return hooks.closingWork
        }
        if let closingWork { ubiquity.removeClosingWork(closingWork) }
        let (leftover, waiters) = state.withLock { ($0.outgoing, $0.flushing) }
        for waiter in waiters { waiter.resume() }
        guard !leftover.isEmpty else { return }
        // The last store went away before the writer took these writes: a last task hands them to the engine.
        Task { [ubiquity, containerIdentifier, logger] in
            _ = await Self.deliver(
                leftover, ubiquity: ubiquity, container: containerIdentifier, logger: logger, stalled: { _ in })
        }
    }

    /// Adds a store that posts this replica's changes.
    func register(_ store: UbiquitousKeyValueStore) {
        state.withLock { state in
            state.stores.removeAll { $0.value == nil }
            state.stores.append(WeakStore(store))
        }
    }

    /// Applies a batch here at once and queues it for the engine, or refuses it whole.
    /// - Throws: The limit the batch would break; a quota violation is also told as a change.
    func write(_ batch: [String: PropertyListValue?]) throws(KeyValueStoreError) {
        let identity = ubiquity.identityToken
        let refusal = state.withLock { state -> KeyValueStoreError? in
            let puts = batch.compactMapValues { $0 }
            let removes = Set(batch.filter { $0.value == nil }.keys)
            if let violation = limits.violation(store: state.values, puts: puts, removes: removes) {
                return KeyValueStoreError(violation) ?? KeyValueStoreError(.storeTooLarge, violation.message)
            }
            state.sequence += 1
            for (key, value) in batch {
                state.values[key] = value
                state.written[key] = Mark(sequence: state.sequence, identity: identity)
                state.outgoing[key] = Outgoing(value: value, identity: identity)
            }
            return nil
        }
        guard let refusal else {
            signals.yield(.wake)
            return
        }
        refuse(refusal, keys: batch.keys.sorted())
        throw refusal
    }

    /// Keeps and logs why a write was refused, and tells of a quota violation.
    func refuse(_ error: KeyValueStoreError, keys: [String]) {
        state.withLock { $0.lastError = error }
        logger.warning("a key-value write was refused", metadata: ["error": "\(error)"])
        if error.isQuotaViolation {
            announce(UbiquitousKeyValueStore.Change(reason: .quotaViolationChange, keys: keys))
        }
    }

    /// Returns once every write made before the call was answered by the engine (or dropped: signed out, another
    /// account signed in, UbiquityKit shut down).
    func synchronized() async {
        await withCheckedContinuation { waiter in
            if case .terminated = signals.yield(.barrier(waiter)) { waiter.resume() }
        }
    }

    /// Returns once the writer has handed the engine every write made so far, or is waiting for an engine it
    /// cannot reach; run before an account change or shutdown closes the containers.
    func flush() async {
        await withCheckedContinuation { waiter in
            let idle = state.withLock { state in
                if (state.outgoing.isEmpty && !state.sending) || state.stalled { return true }
                state.flushing.append(waiter)
                return false
            }
            if idle { waiter.resume() }
        }
    }

    /// Tells the stores' observers and listeners of a change.
    func announce(_ change: UbiquitousKeyValueStore.Change) {
        broadcast.send(change)
        let stores = state.withLock { $0.stores.compactMap(\.value) }
        for store in stores {
            NotificationCenter.default.post(
                name: UbiquitousKeyValueStore.didChangeExternallyNotification, object: store,
                userInfo: [
                    UbiquitousKeyValueStore.changeReasonKey: change.reason.rawValue,
                    UbiquitousKeyValueStore.changedKeysKey: change.keys,
                ])
        }
    }

    private func start(writing stream: AsyncStream<Signal>) {
        let weakSelf = WeakReplica(self)
        let writer = Task {
            for await signal in stream {
                switch signal {
                case .barrier(let waiter): waiter.resume()
                case .wake: await weakSelf.value?.sendOutgoing()
                }
            }
        }
        let follower = Task { [ubiquity, containerIdentifier] in
            await Self.follow(weakSelf, ubiquity: ubiquity, container: containerIdentifier)
        }
        // Both run as long as the replica lives (its deinit cancels them) or until UbiquityKit shuts down.
        tasks.withLock { $0 = [writer, follower] }
        let observer = NotificationCenter.default.addObserver(
            forName: .ubiquityIdentityDidChange, object: ubiquity, queue: nil
        ) { _ in weakSelf.value?.switchAccount() }
        let closingWork = ubiquity.addClosingWork { await weakSelf.value?.flush() }
        hooks.withLock { $0 = (observer, closingWork) }
    }

    /// Hands the queued writes to the engine as one batch, then marks them answered.
    private func sendOutgoing() async {
        let taken = state.withLock { state -> ([String: Outgoing], UInt64)? in
            guard !state.outgoing.isEmpty else { return nil }
            defer { state.outgoing = [:] }
            state.sending = true
            return (state.outgoing, state.sequence)
        }
        guard let (batch, through) = taken else { return }
        let delivery = await Self.deliver(
            batch, ubiquity: ubiquity, container: containerIdentifier, logger: logger,
            stalled: { [weak self] stalled in self?.markStalled(stalled) })
        let waiters = state.withLock { state in
            state.delivered = max(state.delivered, through)
            state.written = state.written.filter { $0.value.sequence > state.delivered }
            state.sending = false
            guard state.outgoing.isEmpty else { return [CheckedContinuation<Void, Never>]() }
            defer { state.flushing = [] }
            return state.flushing
        }
        for waiter in waiters { waiter.resume() }
        if case .refused(let error, let session, let identity) = delivery {
            // The engine's own limits check refused what this store took: the keys take the engine's values again
            // (the engine tells of the quota violation itself).
            if let error { state.withLock { $0.lastError = error } }
            await refresh(from: session, of: identity, keys: nil, reason: nil)
        }
    }

    private func markStalled(_ stalled: Bool) {
        let waiters = state.withLock { state in
            state.stalled = stalled
            guard stalled else { return [CheckedContinuation<Void, Never>]() }
            defer { state.flushing = [] }
            return state.flushing
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// A weak reference to a replica, for the tasks and observers it owns.
struct WeakReplica: Sendable {
    weak var value: KeyValueReplica?
    init(_ value: KeyValueReplica) { self.value = value }
}

/// A weak reference to a store, for the replica that posts its notifications.
struct WeakStore: Sendable {
    weak var value: UbiquitousKeyValueStore?
    init(_ value: UbiquitousKeyValueStore) { self.value = value }
}
