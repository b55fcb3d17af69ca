import DocumentKit
import Foundation
import SyncEngine
import Synchronization
import UbiquityProtocol

/// A live search of the app's containers (Apple's `NSMetadataQuery` over the ubiquitous scopes): it gathers the
/// items that match — placeholders included — then tells of items added, changed and removed as the engine learns
/// of them, here or on other devices, without being restarted.
///
/// ```swift
/// let query = MetadataQuery()
/// query.searchScopes = [.ubiquitousDocuments]
/// query.predicate = #Predicate<MetadataItem> { $0.fileName.starts(with: "Item_") }
/// query.sortDescriptors = [SortDescriptor(\.fileName)]
/// NotificationCenter.default.addObserver(forName: MetadataQuery.didFinishGatheringNotification, object: query,
///                                        queue: nil) { _ in print(query.results) }
/// query.start()
/// ```
public final class MetadataQuery: Sendable {
    /// Where a query looks (Apple's `NSMetadataQueryUbiquitousDocumentsScope` / `…DataScope`).
    public enum SearchScope: Hashable, Sendable {
        /// Items under each container's `Documents/`.
        case ubiquitousDocuments
        /// Items elsewhere in each container (but its private `.ubiquity/`).
        case ubiquitousData
    }

    private enum Phase { case idle, gathering, live, stopped }

    private struct State {
        var scopes: [SearchScope] = [.ubiquitousDocuments]
        var predicate: Predicate<MetadataItem>?
        var sort: [SortDescriptor<MetadataItem>] = []
        var batching: TimeInterval = 0
        var queue: OperationQueue?
        var phase = Phase.idle
        var results = QueryResults(sort: [])
        var disabled = 0
        /// Changes heard and not told yet (while updates are disabled, or within a batching interval).
        var pending: [ItemID: MetadataItem?] = [:]
        var flushScheduled = false
        var task: Task<Void, Never>?
    }

    /// The UbiquityKit instance (device) whose containers are searched.
    public let ubiquity: Ubiquity
    private let state = Mutex(State())
    let broadcast = EventBroadcast<Event>()
    private let types = DocumentTypeRegistry.default

    /// A query of `ubiquity`'s containers (default: ``Ubiquity/default``).
    public init(ubiquity: Ubiquity = .default) { self.ubiquity = ubiquity }

    deinit { state.withLock { $0.task?.cancel() } }

    /// Where to look (default: the documents scope). Set before ``start()``.
    public var searchScopes: [SearchScope] {
        get { state.withLock { $0.scopes } }
        set { state.withLock { $0.scopes = newValue } }
    }

    /// Which items are results (default: all in scope). Set before ``start()``.
    public var predicate: Predicate<MetadataItem>? {
        get { state.withLock { $0.predicate } }
        set { state.withLock { $0.predicate = newValue } }
    }

    /// The results' order (default: by path). Set before ``start()``.
    public var sortDescriptors: [SortDescriptor<MetadataItem>] {
        get { state.withLock { $0.sort } }
        set { state.withLock { $0.sort = newValue } }
    }

    /// How long changes are gathered into one did-update notification, in seconds (default 0: told as they come).
    public var notificationBatchingInterval: TimeInterval {
        get { state.withLock { $0.batching } }
        set { state.withLock { $0.batching = max(0, newValue) } }
    }

    /// Where notifications are posted; `nil` (the default): on the query's own task, as they happen.
    public var operationQueue: OperationQueue? {
        get { state.withLock { $0.queue } }
        set { state.withLock { $0.queue = newValue } }
    }

    /// Whether ``start()`` was called and ``stop()`` was not.
    public var isStarted: Bool { state.withLock { $0.phase == .gathering || $0.phase == .live } }
    /// Whether the first results are being gathered.
    public var isGathering: Bool { state.withLock { $0.phase == .gathering } }
    /// Whether ``stop()`` was called.
    public var isStopped: Bool { state.withLock { $0.phase == .stopped } }

    /// The results, in order.
    public var results: [MetadataItem] { state.withLock { $0.results.ordered } }
    /// How many results there are.
    public var resultCount: Int { state.withLock { $0.results.ordered.count } }
    /// The result at `index`.
    public func result(at index: Int) -> MetadataItem { state.withLock { $0.results.ordered[index] } }
    /// The position of `result` (the same item in any of its updates), or `nil` (Apple: `NSNotFound`).
    public func index(ofResult result: MetadataItem) -> Int? { state.withLock { $0.results.index(of: result.itemID) } }

    /// Every event from now on — gathering, progress, updates — as the notifications tell them.
    public func updates() -> AsyncStream<Event> { broadcast.stream() }

    /// Starts gathering, then live updates. Returns `false` when already started or stopped.
    @discardableResult
    public func start() -> Bool {
        state.withLock { state in
            guard state.phase == .idle else { return false }
            state.phase = .gathering
            state.results = QueryResults(sort: state.sort)
            // The query's work: gathering, then following the engines until stop() cancels it.
            state.task = Task { await self.run() }
            return true
        }
    }

    /// Stops the query: no more notifications; the results stay as they were.
    public func stop() {
        state.withLock { state in
            state.phase = .stopped
            state.task?.cancel()
            state.task = nil
            state.pending = [:]
        }
    }

    /// Holds updates (results and notifications stay as they are) until ``enableUpdates()`` — calls nest.
    public func disableUpdates() { state.withLock { $0.disabled += 1 } }

    /// Lets held updates through (in one did-update) once every ``disableUpdates()`` is matched.
    public func enableUpdates() {
        let release = state.withLock { state -> Bool in
            state.disabled = max(0, state.disabled - 1)
            return state.disabled == 0
        }
        if release { flush() }
    }

    private func run() async {
        tell(.didStartGathering)
        var sessions: [ContainerSession] = []
        for container in ubiquity.configuration.containers {
            if let session = try? await ubiquity.session(for: container) { sessions.append(session) }
        }
        let (merged, feed) = AsyncStream.makeStream(of: (ContainerSession, SyncEvent).self)
        await withTaskGroup(of: Void.self) { group in
            for session in sessions {
                let events = session.events()
                group.addTask {
                    for await event in events { feed.yield((session, event)) }
                }
            }
            let gathered = sessions.flatMap { session in
                session.items().compactMap { self.metadata(of: $0, in: session) }
            }
            let count = state.withLock { state -> Int? in
                guard state.phase == .gathering else { return nil }
                state.results.gather(gathered)
                state.phase = .live
                return state.results.ordered.count
            }
            guard let count else { return group.cancelAll() }
            tell(.gatheringProgress(count))
            tell(.didFinishGathering(results))
            for await (session, event) in merged {
                guard !Task.isCancelled else { break }
                heard(event, in: session)
            }
            group.cancelAll()
        }
    }

    /// The metadata of `item` when it is a result of this query, else `nil`.
    private func metadata(of item: LocalItem, in session: ContainerSession) -> MetadataItem? {
        guard item.kind != .directory else { return nil }
        let (scopes, predicate) = state.withLock { ($0.scopes, $0.predicate) }
        let isDocument = item.path.string.hasPrefix("Documents/")
        guard scopes.contains(isDocument ? .ubiquitousDocuments : .ubiquitousData) else { return nil }
        let metadata = MetadataItem(
            item: item, transfer: session.transfer(of: item.id), layout: session.layout, types: types)
        guard (try? predicate?.evaluate(metadata)) ?? true else { return nil }
        return metadata
    }

    /// Records what an engine event did to an item, and tells of it now or after the batching interval.
    private func heard(_ event: SyncEvent, in session: ContainerSession) {
        let change: (ItemID, MetadataItem?)
        switch event {
        case .itemChanged(let item): change = (item.id, metadata(of: item, in: session))
        case .itemRemoved(let id, _): change = (id, nil)
        case .progress(let id, let path, _):
            guard let item = session.item(at: path), item.id == id else { return }
            change = (id, metadata(of: item, in: session))
        default: return
        }
        let wait = state.withLock { state -> TimeInterval? in
            guard state.phase == .live else { return nil }
            state.pending[change.0] = .some(change.1)
            guard !state.flushScheduled, state.disabled == 0 else { return nil }
            state.flushScheduled = true
            return state.batching
        }
        guard let wait else { return }
        if wait <= 0 { return flush() }
        // The batching interval: changes heard meanwhile go out together.
        Task {
            try? await Task.sleep(for: .seconds(wait))
            self.flush()
        }
    }

    /// Applies the changes heard so far and tells of them, unless updates are disabled.
    private func flush() {
        let update = state.withLock { state -> QueryResults.Update? in
            state.flushScheduled = false
            guard state.phase == .live, state.disabled == 0, !state.pending.isEmpty else { return nil }
            defer { state.pending = [:] }
            return state.results.apply(state.pending)
        }
        guard let update, !update.isEmpty else { return }
        tell(.didUpdate(added: update.added, changed: update.changed, removed: update.removed))
    }
}
