import Foundation
import UbiquityProtocol

/// When a ``MetadataQuery`` tells what: its phase, the changes heard and not yet told, held updates and batching —
/// the pure part of the query, tested without disks, clocks or queues. The query feeds it what it hears and does
/// what the returned ``Action`` says; ``flush(generation:)`` (run where notifications are posted) applies the
/// changes to the results and says what to tell.
///
/// Every run of the query (a start, or a restart after its predicate changed) has a generation; whatever an older run
/// still says is ignored.
struct QueryStateMachine: Sendable {
    /// Where the query is.
    enum Phase: Sendable, Equatable {
        /// Not started.
        case idle
        /// Gathering the first results.
        case gathering
        /// Following changes.
        case live
        /// Stopped for good.
        case stopped
    }

    /// What the query does next about changes heard.
    enum Action: Sendable, Equatable {
        /// Nothing (no change to tell, updates are held, or a flush is already on its way).
        case none
        /// Flush now.
        case flush
        /// Flush once this much time has passed (the batching interval).
        case flushAfter(Duration)
    }

    private(set) var phase = Phase.idle
    private(set) var generation = 0
    private(set) var results = QueryResults()
    /// How long changes are gathered into one update (zero: told as they come).
    var batchingInterval = Duration.zero
    private var disabled = 0
    /// Changes heard and not yet applied: what each item is now when it matches, `nil` when it does not.
    private var pending: [ItemID: MetadataItem?] = [:]
    /// Whether a flush was asked for and has not run yet.
    private var flushAsked = false

    /// Whether updates are held (``disableUpdates()`` more often than ``enableUpdates()``).
    var isHolding: Bool { disabled > 0 }
    /// How many changes wait to be applied.
    var pendingCount: Int { pending.count }

    /// Starts a run — the first, or again while started (the query's predicate, scopes or order changed): the
    /// results are emptied and gathered anew. Returns the run's generation, `nil` once stopped.
    mutating func start(sort: QuerySort) -> Int? {
        guard phase != .stopped else { return nil }
        generation += 1
        phase = .gathering
        results = QueryResults(sort: sort)
        pending = [:]
        flushAsked = false
        return generation
    }

    /// The gathered results are in, in order (sorted by the run's sort); returns them (`nil`: the run is over).
    mutating func finishGathering(sorted entries: [QuerySort.Entry], generation: Int) -> [MetadataItem]? {
        guard generation == self.generation, phase == .gathering else { return nil }
        results.gather(sorted: entries)
        phase = .live
        return results.ordered
    }

    /// The gathered results are in, in any order; returns them in order (`nil`: the run is over).
    mutating func finishGathering(_ items: [MetadataItem], generation: Int) -> [MetadataItem]? {
        finishGathering(sorted: results.sort.sorted(items), generation: generation)
    }

    /// After gathering, whether changes heard meanwhile call for a flush.
    mutating func gathered(generation: Int) -> Action {
        guard generation == self.generation else { return .none }
        return askFlush()
    }

    /// An item changed: `item` is what it is now when it matches the query, `nil` when it is gone or does not match.
    mutating func heard(_ id: ItemID, _ item: MetadataItem?, generation: Int) -> Action {
        guard generation == self.generation, phase == .gathering || phase == .live else { return .none }
        if item == nil, pending.index(forKey: id) == nil, !results.contains(id) { return .none }
        pending[id] = .some(item)
        return askFlush()
    }

    /// A container's items are now `items` (matching ones only): every result of the container not among them goes.
    mutating func replace(container: String, with items: [MetadataItem], generation: Int) -> Action {
        guard generation == self.generation, phase == .live else { return .none }
        for id in results.ids(inContainer: container) { pending[id] = .some(nil) }
        for (id, item) in pending where item?.containerIdentifier == container { pending[id] = .some(nil) }
        for item in items { pending[item.id] = .some(item) }
        return askFlush()
    }

    private mutating func askFlush() -> Action {
        guard phase == .live, disabled == 0, !flushAsked, !pending.isEmpty else { return .none }
        flushAsked = true
        return batchingInterval > .zero ? .flushAfter(batchingInterval) : .flush
    }

    /// The asked-for flush: applies the pending changes to the results and returns what to tell (`nil`: nothing —
    /// held, stopped, an older run, or no result changed).
    mutating func flush(generation: Int) -> QueryResults.Update? {
        guard generation == self.generation, phase == .live else { return nil }
        flushAsked = false
        guard disabled == 0, !pending.isEmpty else { return nil }
        let batch = pending
        pending = [:]
        let update = results.apply(batch)
        return update.isEmpty ? nil : update
    }

    /// Holds updates: results stay as they are and nothing is told; calls nest.
    mutating func disableUpdates() { disabled += 1 }

    /// Matches a ``disableUpdates()``; once all are, what was held is flushed at once.
    mutating func enableUpdates() -> Action {
        guard disabled > 0 else { return .none }
        disabled -= 1
        guard disabled == 0, phase == .live, !pending.isEmpty else { return .none }
        if flushAsked { return .none }
        flushAsked = true
        return .flush
    }

    /// Stops for good: nothing more is heard or told; the results stay.
    mutating func stop() {
        phase = .stopped
        pending = [:]
        flushAsked = false
    }
}
