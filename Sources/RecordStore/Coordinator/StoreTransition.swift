import Foundation

/// Why a coordinator's ubiquitous stores changed (Core Data's `NSPersistentStoreUbiquitousTransitionType`).
public enum PersistentStoreUbiquitousTransitionType: UInt, Sendable, Hashable {
    /// An account was signed in (on its own or in place of another): its store replaces the one in use.
    case accountAdded = 1
    /// The account was signed out: its store is set aside and a local store, whose saves go nowhere, is used.
    case accountRemoved = 2
    /// The store's content was removed from the container (on another device, say): the store is set aside and an
    /// empty one takes its place.
    case contentRemoved = 3
    /// What the container held when the store was added has been brought down and imported.
    case initialImportCompleted = 4
}

/// The `userInfo` key of a store transition's ``PersistentStoreUbiquitousTransitionType`` (its raw value).
public let NSPersistentStoreUbiquitousTransitionTypeKey = "NSPersistentStoreUbiquitousTransitionTypeKey"
/// The `userInfo` key of the stores a transition adds (`[PersistentStore]`).
public let NSAddedPersistentStoresKey = "added"
/// The `userInfo` key of the stores a transition removes (`[PersistentStore]`).
public let NSRemovedPersistentStoresKey = "removed"

/// One step of a store transition, as ``PersistentStoreCoordinator/storeTransitions()`` yields it.
public struct StoreTransition: Sendable {
    /// Before the stores change, or after.
    public enum Phase: Sendable, Hashable {
        /// The stores are about to change: save what must be kept and reset the contexts now.
        case willChange
        /// The stores changed: fetch again.
        case didChange
    }

    /// Before or after.
    public var phase: Phase
    /// Why.
    public var type: PersistentStoreUbiquitousTransitionType
    /// The stores added (known once they are, so empty before the change).
    public var added: [PersistentStore]
    /// The stores removed.
    public var removed: [PersistentStore]

    /// The notification `userInfo` Core Data uses for it.
    var userInfo: [AnyHashable: Any] {
        [
            NSPersistentStoreUbiquitousTransitionTypeKey: type.rawValue, NSAddedPersistentStoresKey: added,
            NSRemovedPersistentStoresKey: removed,
        ]
    }
}

extension PersistentStoreCoordinator {
    /// Posted, on the thread making the change, before a coordinator's stores change: the signed-in account
    /// changed, or the content was removed. The app saves what it must keep and resets its contexts before the
    /// observer returns. The `userInfo` holds ``NSPersistentStoreUbiquitousTransitionTypeKey`` and the stores under
    /// ``NSRemovedPersistentStoresKey`` (Core Data's `NSPersistentStoreCoordinatorStoresWillChangeNotification`).
    public static let storesWillChangeNotification = Notification.Name(
        "NSPersistentStoreCoordinatorStoresWillChangeNotification")

    /// Posted after a coordinator's stores changed, and when a store's initial import completed, with the type
    /// and the stores added and removed (Core Data's `NSPersistentStoreCoordinatorStoresDidChangeNotification`).
    public static let storesDidChangeNotification = Notification.Name(
        "NSPersistentStoreCoordinatorStoresDidChangeNotification")
}
