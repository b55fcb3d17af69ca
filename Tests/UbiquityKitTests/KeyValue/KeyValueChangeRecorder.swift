import Foundation
import Synchronization
import UbiquityKit

/// A store's external changes as heard from the notification and from the AsyncSequence.
final class KeyValueChangeLog: Sendable {
    let notified = Mutex<[UbiquitousKeyValueStore.Change]>([])
    let streamed = Mutex<[UbiquitousKeyValueStore.Change]>([])
}

/// Records a store's external changes, from the notification and from the AsyncSequence, until dropped.
final class KeyValueChangeRecorder {
    typealias Change = UbiquitousKeyValueStore.Change
    typealias Reason = UbiquitousKeyValueStore.ChangeReason

    let log = KeyValueChangeLog()
    private let observer: any NSObjectProtocol
    private let task: Task<Void, Never>

    init(_ store: UbiquitousKeyValueStore) {
        let changes = store.changes()
        let log = log
        // Collects the stream until the recorder is dropped.
        task = Task { for await change in changes { log.streamed.withLock { $0.append(change) } } }
        observer = NotificationCenter.default.addObserver(
            forName: UbiquitousKeyValueStore.didChangeExternallyNotification, object: store, queue: nil
        ) { note in
            let raw = note.userInfo?[UbiquitousKeyValueStore.changeReasonKey] as? Int ?? -1
            let keys = note.userInfo?[UbiquitousKeyValueStore.changedKeysKey] as? [String] ?? []
            guard let reason = Reason(rawValue: raw) else { return }
            log.notified.withLock { $0.append(Change(reason: reason, keys: keys)) }
        }
    }

    deinit {
        task.cancel()
        NotificationCenter.default.removeObserver(observer)
    }

    /// What the notification told, in order.
    var notified: [Change] { log.notified.withLock { $0 } }
    /// What the AsyncSequence told, in order.
    var streamed: [Change] { log.streamed.withLock { $0 } }

    /// Whether both the notification and the stream told of a change for `reason` naming every key of `keys`.
    func heard(_ reason: Reason, keys: Set<String>) -> Bool {
        let match = { (change: Change) in change.reason == reason && keys.isSubset(of: change.keys) }
        return notified.contains(where: match) && streamed.contains(where: match)
    }

    /// The keys the notification and the stream each told for `reason`, all changes together.
    func keys(told reason: Reason) -> (notified: Set<String>, streamed: Set<String>) {
        let keys = { (changes: [Change]) in Set(changes.filter { $0.reason == reason }.flatMap(\.keys)) }
        return (keys(notified), keys(streamed))
    }

    /// Whether a change named `key`, for any reason.
    func named(_ key: String) -> Bool { (notified + streamed).contains { $0.keys.contains(key) } }
}
