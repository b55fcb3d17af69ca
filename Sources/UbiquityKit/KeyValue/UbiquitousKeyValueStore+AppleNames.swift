import Foundation

// Apple's global names for the key-value store's notification keys and change reasons, so code written for
// `NSUbiquitousKeyValueStore` reads the notification unchanged:
//
//     switch note.userInfo?[NSUbiquitousKeyValueStoreChangeReasonKey] as? Int {
//     case NSUbiquitousKeyValueStoreServerChange, NSUbiquitousKeyValueStoreInitialSyncChange: …

/// The user-info key of the change's reason (``UbiquitousKeyValueStore/changeReasonKey``).
public let NSUbiquitousKeyValueStoreChangeReasonKey = UbiquitousKeyValueStore.changeReasonKey
/// The user-info key of the changed keys (``UbiquitousKeyValueStore/changedKeysKey``).
public let NSUbiquitousKeyValueStoreChangedKeysKey = UbiquitousKeyValueStore.changedKeysKey
/// Another device changed values (``UbiquitousKeyValueStore/ChangeReason/serverChange``, 0).
public let NSUbiquitousKeyValueStoreServerChange = UbiquitousKeyValueStore.ChangeReason.serverChange.rawValue
/// The first values heard on this device (``UbiquitousKeyValueStore/ChangeReason/initialSyncChange``, 1).
public let NSUbiquitousKeyValueStoreInitialSyncChange = UbiquitousKeyValueStore.ChangeReason.initialSyncChange.rawValue
/// Writes went over the limits (``UbiquitousKeyValueStore/ChangeReason/quotaViolationChange``, 2).
public let NSUbiquitousKeyValueStoreQuotaViolationChange =
    UbiquitousKeyValueStore.ChangeReason.quotaViolationChange.rawValue
/// The signed-in account changed (``UbiquitousKeyValueStore/ChangeReason/accountChange``, 3).
public let NSUbiquitousKeyValueStoreAccountChange = UbiquitousKeyValueStore.ChangeReason.accountChange.rawValue
