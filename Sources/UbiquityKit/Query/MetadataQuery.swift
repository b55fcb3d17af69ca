import DocumentKit
import Foundation
import Synchronization

/// A live search of the app's containers (Apple's `NSMetadataQuery` over the ubiquitous scopes): it gathers the
/// items that match — placeholders included — then tells of items added, changed and removed as the engine learns
/// of them, here or on other devices, without being restarted. The engine may run in the app or in `ubiquity sync`;
/// the query behaves the same.
///
/// ```swift
/// let query = MetadataQuery()
/// query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
/// query.predicate = #Predicate<MetadataItem> { $0.fileName.starts(with: "Item_") }
/// query.sortDescriptors = [SortDescriptor(\.fileName)]
/// NotificationCenter.default.addObserver(forName: NSMetadataQueryDidFinishGathering, object: query,
///                                        queue: nil) { _ in print(query.results) }
/// query.start()
/// ```
///
/// Notifications are posted one at a time, in order, on ``operationQueue`` — by default a serial queue of the query's
/// own, never a Swift concurrency thread — and ``results`` change only there, just before the did-update that tells
/// of the change: read in an observer, they are the results that notification describes.
public final class MetadataQuery: Sendable {
    struct State {
        var scopes: [SearchScope] = [.ubiquitousDocuments]
        var predicate: Predicate<MetadataItem>?
        var sortDescriptors: [SortDescriptor<MetadataItem>] = []
        var batchingInterval: TimeInterval = 0
        var clock: any Clock<Duration> = ContinuousClock()
        var operationQueue: OperationQueue?
        var machine = QueryStateMachine()
        /// The current run: gathering, then following the engines.
        var run: Task<Void, Never>?
        /// What is still to be posted, oldest first, and whether a drain of it is under way.
        var outbox: [Delivery] = []
        var outboxStart = 0
        var draining = false
    }

    /// The UbiquityKit instance (device) whose containers are searched.
    public let ubiquity: Ubiquity
    let state = Mutex(State())
    let broadcast = EventBroadcast<Event>()
    /// Where notifications are posted when ``operationQueue`` is `nil`.
    let ownQueue = DispatchQueue(label: "UbiquityKit.MetadataQuery")
    /// Where content types come from.
    let types: DocumentTypeRegistry

    /// A query of `ubiquity`'s containers (default: ``Ubiquity/default``), in the documents scope, matching every
    /// item, not started.
    public init(ubiquity: Ubiquity = .default) {
        self.ubiquity = ubiquity
        types = .default
    }

    deinit {
        state.withLock { $0.run }?.cancel()
        broadcast.finish()
    }

    /// Where to look (default: the documents scope). Setting it on a started query gathers again.
    public var searchScopes: [SearchScope] {
        get { state.withLock { $0.scopes } }
        set { reconfigure { $0.scopes = newValue } }
    }

    /// Which items are results (default `nil`: every item in scope), as a `#Predicate` over ``MetadataItem``.
    /// Setting it on a started query gathers again.
    ///
    /// ```swift
    /// query.predicate = #Predicate<MetadataItem> { $0.fileSize > 1_000 && $0.fileName.starts(with: "Item_") }
    /// ```
    public var predicate: Predicate<MetadataItem>? {
        get { state.withLock { $0.predicate } }
        set { reconfigure { $0.predicate = newValue } }
    }

    /// The results' order (default: by path). Ties go by path. Setting it on a started query gathers again.
    ///
    /// Descriptors on `String`, `Int`, `Int64`, `Double` and `Date` properties are fastest (their values are read once
    /// per result); any other is asked on every comparison.
    public var sortDescriptors: [SortDescriptor<MetadataItem>] {
        get { state.withLock { $0.sortDescriptors } }
        set { reconfigure { $0.sortDescriptors = newValue } }
    }

    /// How long, in seconds, changes are gathered into one did-update (default 0: each is told as it comes). The
    /// first change after a quiet spell starts the interval; everything heard until it ends is told together.
    /// The clock the batching interval is measured on (the continuous clock; a test hands in one it moves itself).
    public var clock: any Clock<Duration> {
        get { state.withLock { $0.clock } }
        set { state.withLock { $0.clock = newValue } }
    }

    public var notificationBatchingInterval: TimeInterval {
        get { state.withLock { $0.batchingInterval } }
        set {
            state.withLock { state in
                state.batchingInterval = newValue.isFinite ? max(0, newValue) : 0
                state.machine.batchingInterval = .milliseconds(Int64(state.batchingInterval * 1000))
            }
        }
    }

    /// Where notifications are posted, and ``results`` change (default `nil`: a serial queue of the query's own).
    /// Apple's default is the main queue; set `OperationQueue.main` for that, in a process that runs it (an async
    /// `main`, `dispatchMain()` or a run loop). Notifications stay in order on any queue.
    public var operationQueue: OperationQueue? {
        get { state.withLock { $0.operationQueue } }
        set { state.withLock { $0.operationQueue = newValue } }
    }

    /// Whether ``start()`` was called and ``stop()`` was not.
    public var isStarted: Bool {
        state.withLock { $0.machine.phase == .gathering || $0.machine.phase == .live }
    }
    /// Whether the first results are being gathered.
    public var isGathering: Bool { state.withLock { $0.machine.phase == .gathering } }
    /// Whether ``stop()`` was called.
    public var isStopped: Bool { state.withLock { $0.machine.phase == .stopped } }

    /// The results, in order.
    public var results: [MetadataItem] { state.withLock { $0.machine.results.ordered } }
    /// How many results there are.
    public var resultCount: Int { state.withLock { $0.machine.results.count } }

    /// The result at `index` (`0 ..< resultCount`).
    public func result(at index: Int) -> MetadataItem { state.withLock { $0.machine.results.ordered[index] } }

    /// The position of `result` among the results — found by its ``MetadataItem/id``, so an item from an earlier
    /// notification finds where the item is now — or `nil` when it is not a result (Apple: `NSNotFound`).
    public func index(ofResult result: MetadataItem) -> Int? {
        state.withLock { $0.machine.results.index(of: result.id) }
    }

    /// The value of an attribute of the result at `index` (Apple's `value(ofAttribute:forResultAt:)`).
    public func value(ofAttribute attribute: String, forResultAt index: Int) -> Any? {
        result(at: index).value(forAttribute: attribute)
    }

    /// Changes the query's setup; a started query gathers again with it.
    private func reconfigure(_ change: (inout State) -> Void) {
        let drain = state.withLock { state -> Bool in
            change(&state)
            guard state.machine.phase == .gathering || state.machine.phase == .live else { return false }
            return launch(&state)
        }
        if drain { scheduleDrain() }
    }
}

/// A weak reference to a query, for its own tasks: a query nobody holds goes away, and its tasks end.
struct WeakQuery: Sendable {
    weak var query: MetadataQuery?
}
