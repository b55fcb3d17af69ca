import Foundation
import SyncEngine

extension UbiquitousKeyValueStore {
    /// Posted when values changed from outside this store — another device, the first sync, a quota violation,
    /// an account change (Apple's `NSUbiquitousKeyValueStore.didChangeExternallyNotification`); the object is the
    /// store, and the user info holds ``changeReasonKey`` and ``changedKeysKey``.
    public static let didChangeExternallyNotification = Notification.Name(
        "NSUbiquitousKeyValueStoreDidChangeExternallyNotification")
    /// The user-info key of the change's reason: a ``ChangeReason`` raw value (`Int`).
    public static let changeReasonKey = "NSUbiquitousKeyValueStoreChangeReasonKey"
    /// The user-info key of the changed keys (`[String]`).
    public static let changedKeysKey = "NSUbiquitousKeyValueStoreChangedKeysKey"

    /// Why values changed, with Apple's raw values.
    public enum ChangeReason: Int, Hashable, Sendable {
        /// Another device changed them (`NSUbiquitousKeyValueStoreServerChange`).
        case serverChange = 0
        /// The first values heard from the service on this device (`NSUbiquitousKeyValueStoreInitialSyncChange`).
        case initialSyncChange = 1
        /// Writes went over the store's limits and were refused or dropped
        /// (`NSUbiquitousKeyValueStoreQuotaViolationChange`).
        case quotaViolationChange = 2
        /// The signed-in account changed (`NSUbiquitousKeyValueStoreAccountChange`).
        case accountChange = 3

        init?(_ reason: KeyValueChangeReason) {
            switch reason {
            case .serverChange: self = .serverChange
            case .initialSyncChange: self = .initialSyncChange
            case .quotaViolationChange: self = .quotaViolationChange
            case .accountChange: self = .accountChange
            case .localChange: return nil
            }
        }
    }

    /// One external change: why, and which keys.
    public struct Change: Hashable, Sendable {
        /// Why the values changed.
        public var reason: ChangeReason
        /// The keys that changed.
        public var keys: [String]

        /// Creates a change record.
        public init(reason: ChangeReason, keys: [String]) {
            self.reason = reason
            self.keys = keys
        }
    }

    /// Every external change from now on, as ``didChangeExternallyNotification`` tells them, for as long as the
    /// stream is iterated.
    public func changes() -> AsyncStream<Change> { broadcast.stream() }

    /// Tells listeners and observers of a change.
    func announce(_ change: Change) {
        guard !change.keys.isEmpty || change.reason == .accountChange else { return }
        broadcast.send(change)
        NotificationCenter.default.post(
            name: Self.didChangeExternallyNotification, object: self,
            userInfo: [Self.changeReasonKey: change.reason.rawValue, Self.changedKeysKey: change.keys])
    }
}
