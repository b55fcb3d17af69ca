import Foundation
import Logging
import SyncEngine
import Synchronization
import UbiquityProtocol

/// A container's key-value store (Apple's `NSUbiquitousKeyValueStore`): small property-list values kept in step
/// across the account's devices, the later write of a key winning everywhere.
///
/// Reads answer from memory at once. A write takes effect in this store at once and goes to the container's engine
/// in order (embedded, or `ubiquity sync` over its socket), which keeps it on disk and sends it to the service.
/// Values are loaded from the engine's state database when the store is made, so a new store sees what an earlier
/// one wrote.
///
/// ```swift
/// let store = UbiquitousKeyValueStore.default
/// store.set("name", forKey: "sortOrder")
/// NotificationCenter.default.addObserver(
///     forName: UbiquitousKeyValueStore.didChangeExternallyNotification, object: store, queue: .main) { note in … }
/// ```
///
/// Apple's limits hold: 1,024 keys, 1 MB in all, keys of 1 to 64 UTF-8 bytes. A write that would break one is
/// refused whole: nothing changes, the error is kept in ``lastError`` and logged, and a write over the key or size
/// limits is also told as a ``ChangeReason/quotaViolationChange``. ``setValue(_:forKey:)`` throws the same errors.
public final class UbiquitousKeyValueStore: Sendable {
    struct State {
        var values: [String: PropertyListValue] = [:] {
            didSet { bytes = nil }
        }
        /// The size of `values` as the limits count it, once worked out: a write then checks the limits in time
        /// proportional to itself, not to the store (a thousand writes of a key each would otherwise take seconds).
        var bytes: Int?
        /// Keys written here whose write the engine has not taken yet: refreshes from the engine leave them alone.
        var pending: [String: Int] = [:]
        var lastError: ProtocolError?
        /// Writes not yet handed to the engine, merged (the later write of a key replaces the earlier), and how many
        /// writes of each key they hold.
        var outgoing: [String: PropertyListValue?] = [:]
        var outgoingCounts: [String: Int] = [:]
        /// The account whose values these are.
        var identity: UbiquityIdentityToken?
    }

    /// What the writer is told: writes are waiting in ``State/outgoing`` (the writer sends them all as one batch,
    /// so a burst of writes costs one engine call), or a barrier to release once every earlier write went out.
    enum Write: Sendable {
        case wake
        case barrier(CheckedContinuation<Void, Never>)
    }

    /// The UbiquityKit instance (device) the store belongs to.
    public let ubiquity: Ubiquity
    /// The container, as given (`nil`: the app's first).
    public let containerIdentifier: String?
    let state: Mutex<State>
    let broadcast = EventBroadcast<Change>()
    let writes: AsyncStream<Write>.Continuation
    private let tasks = Mutex<[Task<Void, Never>]>([])
    let limits = KeyValueLimits.apple
    let logger: Logger

    private static let defaults = Mutex<[ObjectIdentifier: UbiquitousKeyValueStore]>([:])

    /// The store of ``Ubiquity/default``'s first container (Apple's `NSUbiquitousKeyValueStore.default`).
    public static var `default`: UbiquitousKeyValueStore {
        let ubiquity = Ubiquity.default
        return defaults.withLock { stores in
            if let store = stores[ObjectIdentifier(ubiquity)] { return store }
            let store = UbiquitousKeyValueStore(ubiquity: ubiquity)
            stores[ObjectIdentifier(ubiquity)] = store
            return store
        }
    }

    /// The store of a container of `ubiquity` (`nil`: its first).
    public init(ubiquity: Ubiquity = .default, containerIdentifier: String? = nil) {
        self.ubiquity = ubiquity
        self.containerIdentifier = containerIdentifier
        logger = ubiquity.configuration.logger
        let (stream, continuation) = AsyncStream.makeStream(of: Write.self)
        writes = continuation
        state = Mutex(
            State(
                values: Self.storedValues(ubiquity: ubiquity, container: containerIdentifier),
                identity: ubiquity.identityToken))
        start(writing: stream)
    }

    deinit {
        writes.finish()
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }

    /// The values the engine's state database holds for the signed-in account, read when the store is made.
    private static func storedValues(ubiquity: Ubiquity, container identifier: String?) -> [String: PropertyListValue] {
        guard let token = ubiquity.identityToken, let container = ubiquity.container(identifier) else { return [:] }
        let layout = ubiquity.layout(of: container)
        let owner = try? String(contentsOf: layout.accountFile, encoding: .utf8)
        guard owner?.trimmingCharacters(in: .whitespacesAndNewlines) == token.value,
            FileManager.default.fileExists(atPath: layout.stateDatabase.path)
        else { return [:] }
        return (try? LocalStateStore(url: layout.stateDatabase).keyValues()) ?? [:]
    }

    /// The value of `key` as a property-list value.
    public func value(forKey key: String) -> PropertyListValue? { state.withLock { $0.values[key] } }

    /// Every key and value, as property-list values.
    public var values: [String: PropertyListValue] { state.withLock { $0.values } }

    /// Why the last refused write was refused; `nil` when none was.
    public var lastError: ProtocolError? { state.withLock { $0.lastError } }

    /// Writes `value` under `key` (`nil` removes the key) — at once here, then on the engine and every device.
    /// - Throws: ``ProtocolError`` with ``ProtocolError/Code/keyValueKeyTooLong`` (an empty key or one over 64 UTF-8
    ///   bytes), ``ProtocolError/Code/keyValueTooManyKeys`` or ``ProtocolError/Code/keyValueStoreTooLarge``; nothing
    ///   changes then (the last two are also told as a quota-violation change).
    public func setValue(_ value: PropertyListValue?, forKey key: String) throws(ProtocolError) {
        try write([key: value])
    }

    /// Applies a batch here at once and queues it for the engine, or refuses it whole.
    func write(_ batch: [String: PropertyListValue?]) throws(ProtocolError) {
        let refusal = state.withLock { state -> ProtocolError? in
            let puts = batch.compactMapValues { $0 }
            let removes = Set(batch.filter { $0.value == nil }.keys)
            let before = state.bytes ?? KeyValueLimits.size(of: state.values)
            let (error, after) = limits.violation(store: state.values, bytes: before, puts: puts, removes: removes)
            if let error {
                state.bytes = before
                state.lastError = error
                return error
            }
            for (key, value) in batch {
                state.values[key] = value
                state.pending[key, default: 0] += 1
                state.outgoing[key] = .some(value)
                state.outgoingCounts[key, default: 0] += 1
            }
            state.bytes = after
            writes.yield(.wake)
            return nil
        }
        guard let refusal else { return }
        logger.warning("a key-value write was refused", metadata: ["error": "\(refusal)"])
        if refusal.code != .keyValueKeyTooLong {
            announce(Change(reason: .quotaViolationChange, keys: batch.keys.sorted()))
        }
        throw refusal
    }

    /// Whether the store is in step with what this process wrote: `true` when signed in (writes are kept in order
    /// and go to the engine as soon as it is reached). Use ``synchronized()`` to wait until they have.
    @discardableResult
    public func synchronize() -> Bool { ubiquity.identityToken != nil }

    /// Returns once every write made before the call has reached the engine (which keeps it on disk and sends it).
    public func synchronized() async {
        await withCheckedContinuation { waiter in
            if case .terminated = writes.yield(.barrier(waiter)) { waiter.resume() }
        }
    }

    private func start(writing stream: AsyncStream<Write>) {
        let writer = Task { [weak self, ubiquity, containerIdentifier, logger] in
            for await write in stream {
                switch write {
                case .barrier(let waiter): waiter.resume()
                case .wake:
                    guard let (batch, counts) = self?.takeOutgoing(), !batch.isEmpty else { continue }
                    await Self.send(batch, ubiquity: ubiquity, container: containerIdentifier, logger: logger)
                    self?.settle(counts)
                }
            }
        }
        let weakStore = WeakStore(self)
        let listener = Task { [ubiquity, containerIdentifier] in
            await Self.listen(to: ubiquity, container: containerIdentifier, store: { weakStore.value })
        }
        let accounts = ubiquity.identityChanges()
        let switcher = Task { [weak self] in
            for await _ in accounts {
                await self?.switchAccount()
            }
        }
        // The three run as long as the store lives (its deinit cancels them) or until the instance shuts down.
        tasks.withLock { $0 = [writer, listener, switcher] }
    }

    /// The writes waiting for the engine, as one batch, and how many writes of each key it holds.
    private func takeOutgoing() -> ([String: PropertyListValue?], [String: Int]) {
        state.withLock { state in
            defer {
                state.outgoing = [:]
                state.outgoingCounts = [:]
            }
            return (state.outgoing, state.outgoingCounts)
        }
    }

    /// Marks writes as taken by the engine.
    private func settle(_ counts: [String: Int]) {
        state.withLock { state in
            for (key, count) in counts {
                let left = (state.pending[key] ?? count) - count
                state.pending[key] = left > 0 ? left : nil
            }
        }
    }
}

/// A weak reference to a store, for the tasks it owns.
private struct WeakStore: Sendable {
    weak var value: UbiquitousKeyValueStore?
    init(_ value: UbiquitousKeyValueStore) { self.value = value }
}
