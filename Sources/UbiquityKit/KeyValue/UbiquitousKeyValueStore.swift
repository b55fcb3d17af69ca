import Foundation
import Synchronization
import UbiquityProtocol

/// A container's key-value store (Apple's `NSUbiquitousKeyValueStore`): small property-list values kept in step
/// across the account's devices, the later write of a key winning everywhere.
///
/// ```swift
/// let store = UbiquitousKeyValueStore.default
/// store.set("aisle", forKey: "sortOrder")
/// NotificationCenter.default.addObserver(
///     forName: UbiquitousKeyValueStore.didChangeExternallyNotification, object: store, queue: nil
/// ) { note in
///     let keys = note.userInfo?[UbiquitousKeyValueStore.changedKeysKey] as? [String] ?? []
///     …
/// }
/// ```
///
/// **Reading** answers from memory at once and never waits. The values are loaded from the container's state
/// database on this machine when the first store of a container is made (a short read on the calling thread, so
/// they are right before the container's engine is even reached), and follow the engine from then on.
///
/// **Writing** takes effect at once in every store of the same ``Ubiquity`` instance and container, which share
/// their memory. The writes go to the container's engine (embedded, or `ubiquity sync` over its socket) in the order
/// they were made, by one writer; the engine keeps them in its state database, where other processes and later
/// launches see them, and sends them to the service. That is usually a matter of milliseconds; ``synchronized()``
/// waits for it, and an account change or ``Ubiquity/shutdown()`` hands the engine every write made before it.
/// Signed out, writes apply in memory only.
///
/// **Limits** are Apple's: 1,024 keys, 1 MB in all (keys and values; so no single value over 1 MB either), keys of
/// 1 to 64 UTF-8 bytes. A write that would break one is refused whole and changes nothing. Apple's setters do not
/// throw: they log the refusal and keep it in ``lastError``, and a write over the key-count or size limit is also
/// told as a ``ChangeReason/quotaViolationChange`` naming its keys, as Apple's store does. ``setValue(_:forKey:)``
/// throws the same ``KeyValueStoreError``.
///
/// **Changes** made elsewhere — another device (``ChangeReason/serverChange``), the first sync of this device
/// (``ChangeReason/initialSyncChange``), another account signed in (``ChangeReason/accountChange``) — update the
/// values, then are told by ``didChangeExternallyNotification`` and ``changes()``. A write by another process of
/// this device (`ubiquity kv set`, say) updates the values too, without a notification, as on Apple's platforms.
public final class UbiquitousKeyValueStore: Sendable {
    /// The UbiquityKit instance (device) the store belongs to.
    public let ubiquity: Ubiquity
    /// The container, as given (`nil`: the app's first).
    public let containerIdentifier: String?
    let replica: KeyValueReplica

    private static let defaults = Mutex<[ObjectIdentifier: UbiquitousKeyValueStore]>([:])

    /// The store of ``Ubiquity/default``'s first container (Apple's `NSUbiquitousKeyValueStore.default`): one
    /// instance per ``Ubiquity`` instance, made the first time.
    public static var `default`: UbiquitousKeyValueStore {
        let ubiquity = Ubiquity.default
        return defaults.withLock { stores in
            if let store = stores[ObjectIdentifier(ubiquity)] { return store }
            let store = UbiquitousKeyValueStore(ubiquity: ubiquity)
            stores[ObjectIdentifier(ubiquity)] = store
            return store
        }
    }

    /// A store of a container of `ubiquity`. Stores of the same instance and container share their values and
    /// writes; each posts ``didChangeExternallyNotification`` with itself as the object.
    /// - Parameters:
    ///   - ubiquity: The UbiquityKit instance; by default ``Ubiquity/default``.
    ///   - containerIdentifier: One of the instance's containers; `nil` for its first.
    public init(ubiquity: Ubiquity = .default, containerIdentifier: String? = nil) {
        self.ubiquity = ubiquity
        self.containerIdentifier = containerIdentifier
        replica = KeyValueReplica.shared(ubiquity: ubiquity, container: containerIdentifier)
        replica.register(self)
    }

    /// The value of `key`; `nil` when there is none.
    public func value(forKey key: String) -> PropertyListValue? { replica.state.withLock { $0.values[key] } }

    /// Every key and its value.
    public var values: [String: PropertyListValue] { replica.state.withLock { $0.values } }

    /// Why the last refused write was refused; `nil` when none was.
    public var lastError: KeyValueStoreError? { replica.state.withLock { $0.lastError } }

    /// Writes `value` under `key` (`nil` removes the key): at once here, then on the engine and every device.
    ///
    /// ```swift
    /// try store.setValue(.array([.string("milk"), .integer(2)]), forKey: "list")
    /// ```
    /// - Throws: ``KeyValueStoreError`` — ``KeyValueStoreError/Code/keyTooLong`` (an empty key, or one over 64
    ///   UTF-8 bytes), ``KeyValueStoreError/Code/tooManyKeys`` or ``KeyValueStoreError/Code/storeTooLarge``. Nothing
    ///   changes then; the last two are also told as a ``ChangeReason/quotaViolationChange``.
    public func setValue(_ value: PropertyListValue?, forKey key: String) throws(KeyValueStoreError) {
        try replica.write([key: value])
    }

    /// Whether the store can keep its values in step (Apple's `synchronize()`): `true` when signed in, for one of
    /// the app's containers. It never waits: every write is already on its way to the engine, in order; use
    /// ``synchronized()`` to wait until the engine has them.
    @discardableResult
    public func synchronize() -> Bool {
        ubiquity.identityToken != nil && ubiquity.container(containerIdentifier) != nil && !ubiquity.isShutDown
    }

    /// Returns once every write made before the call is in the engine's state database (so other processes and
    /// later launches see it, and it is on its way to the service), or was dropped because the account changed
    /// or UbiquityKit shut down. Waits while the engine cannot be reached.
    public func synchronized() async { await replica.synchronized() }
}
