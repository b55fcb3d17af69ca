import Foundation
import Synchronization
import UbiquityKit

/// One thing a query told, by file name: the kind, and the names of the added, changed and removed items (for
/// did-finish-gathering, the results in `added`).
struct QueryLogEntry: Equatable, Sendable, CustomStringConvertible {
    var kind: String
    var added: [String] = []
    var changed: [String] = []
    var removed: [String] = []

    init(_ event: MetadataQuery.Event) {
        switch event {
        case .didStartGathering: kind = "start"
        case .gatheringProgress: kind = "progress"
        case .didFinishGathering(let results):
            kind = "finish"
            added = results.map(\.fileName)
        case .didUpdate(let added, let changed, let removed):
            kind = "update"
            self.added = added.map(\.fileName)
            self.changed = changed.map(\.fileName)
            self.removed = removed.map(\.fileName)
        }
    }

    var description: String { "\(kind) +\(added) ~\(changed) -\(removed)" }
}

/// A value behind a lock, shared by reference.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<Result>(_ body: (inout Value) -> Result) -> Result { mutex.withLock { body(&$0) } }
}

/// Everything a query tells, from its notifications and from its AsyncSequence, until dropped; and, for each
/// notification, the queue it was posted on and whether the query's results agreed with it then.
final class QueryRecorder {
    let streamed = Locked<[QueryLogEntry]>([])
    let notified = Locked<[QueryLogEntry]>([])
    /// Notifications whose items did not agree with the query's results when they were posted.
    let disagreements = Locked<[String]>([])
    /// The queues notifications were posted on.
    let queues = Locked<[ObjectIdentifier?]>([])
    private let observers: [any NSObjectProtocol]
    private let task: Task<Void, Never>

    init(_ query: MetadataQuery) {
        let updates = query.updates()
        let streamed = streamed
        // Collects the stream until the recorder is dropped (or the query stops).
        task = Task { for await event in updates { streamed.withLock { $0.append(QueryLogEntry(event)) } } }
        let (notified, disagreements, queues) = (notified, disagreements, queues)
        let names = [
            MetadataQuery.didStartGatheringNotification, MetadataQuery.gatheringProgressNotification,
            NSMetadataQueryDidFinishGathering, NSMetadataQueryDidUpdate,
        ]
        observers = names.map { name in
            NotificationCenter.default.addObserver(forName: name, object: query, queue: nil) { note in
                queues.withLock { $0.append(OperationQueue.current.map(ObjectIdentifier.init)) }
                let (entry, agrees) = Self.entry(note, of: query)
                if !agrees { disagreements.withLock { $0.append(entry.description) } }
                notified.withLock { $0.append(entry) }
            }
        }
    }

    private static func entry(_ note: Notification, of query: MetadataQuery) -> (QueryLogEntry, Bool) {
        switch note.name {
        case MetadataQuery.didStartGatheringNotification: return (QueryLogEntry(.didStartGathering), true)
        case MetadataQuery.gatheringProgressNotification: return (QueryLogEntry(.gatheringProgress(0)), true)
        case NSMetadataQueryDidFinishGathering: return (QueryLogEntry(.didFinishGathering(query.results)), true)
        default:
            let items = { (key: String) in note.userInfo?[key] as? [MetadataItem] ?? [] }
            let (added, changed, removed) = (
                items(NSMetadataQueryUpdateAddedItemsKey), items(NSMetadataQueryUpdateChangedItemsKey),
                items(NSMetadataQueryUpdateRemovedItemsKey)
            )
            let results = query.results
            let ids = Set(results.map(\.id))
            let agrees =
                (added + changed).allSatisfy { item in results.contains { $0 === item } }
                && removed.allSatisfy { !ids.contains($0.id) }
            return (QueryLogEntry(.didUpdate(added: added, changed: changed, removed: removed)), agrees)
        }
    }

    deinit {
        task.cancel()
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
    }

    /// The did-updates told so far, from the notifications.
    var updates: [QueryLogEntry] { notified.withLock { $0.filter { $0.kind == "update" } } }

    /// Whether a notification of `kind` was posted.
    func told(_ kind: String) -> Bool { notified.withLock { $0.contains { $0.kind == kind } } }

    /// Whether a did-update added, changed or removed (`+`, `~`, `-`) the item named `name`.
    func updated(_ mark: Character, _ name: String) -> Bool {
        updates.contains { entry in
            switch mark {
            case "+": entry.added.contains(name)
            case "~": entry.changed.contains(name)
            default: entry.removed.contains(name)
            }
        }
    }
}
