import Foundation
import UbiquityProtocol

/// The executor's loop: plan, run the batch (one lane per item, a few items at a time), plan again — until every
/// item is in step, or what is left failed for a reason of its own (recorded on the item) or waits.
extension ContainerSync {
    /// How many items' operations run at once: enough that the creations, commits and chunks of many small files
    /// meet in the request batchers and the service's group commit (at 8, a request carried one or two files' worth;
    /// at 32, a few, and the two cores were a third idle while many small files went up). What transfers hold in
    /// memory is bounded apart from this (``largeUploadCount``, ``smallUploadMemory``, the chunk batcher's window).
    static let operationWindow = 128

    /// The most operations one item gets in one round; an item that needs more is left for the next round (a file
    /// rewritten faster than it can be read, say), so a round always ends.
    static let operationsPerItem = 16

    /// What running one operation came to.
    enum OperationResult: Sendable {
        /// Done, and recorded.
        case done
        /// The world moved on since the plan (the local copy changed, another operation went first): planned again.
        case stale
        /// Refused for a reason of the item's own (recorded on it): left until the next round.
        case refused
        /// The service has another item at the path: planned again once the service's feed said which (a round reads
        /// it after sending what changed here, so an app never hears of the service's changes before its own went
        /// up).
        case pathTaken
    }

    /// How many items out of step are planned at once by default: the items of a large change (a folder of 100,000
    /// files moved in) are read, planned and moved a page at a time, so what a round holds does not grow with it.
    public static let defaultPlanningPage = 1_024

    /// Plans and runs operations until nothing is left to do this round. An unreachable service ends the round (the
    /// observations stay; the next round plans the same work).
    ///
    /// The items out of step are planned a page at a time, in the order of their ids: a page is planned and run
    /// until it has nothing to do, then the next one; a page whose items all wait (refused, parked, in another's
    /// lane) gives way to the next, so they never hold up the items after them. A pass over every page that ran
    /// something is followed by another, since an item's operations can give another item work; the round ends
    /// after a pass that ran nothing.
    func settle() async throws {
        var counts: [ItemID: Int] = [:]
        var parked: Set<ItemID> = []
        var cursor: ItemID?
        var ranThisPass = false
        // At least one (the configuration's field may have been set below after it was made).
        let pageSize = max(1, configuration.planningPage)
        while true {
            let page = try state.recordsNotInStep(after: cursor, limit: pageSize)
            let records = try planningSet(page)
            let observations = records.map(\.observation)
            let operations = planner.plan(
                observations, inFlight: parked.union(lanes.busy), earlierVersions: try earlierVersions(of: observations)
            )
            if operations.isEmpty {
                if page.count == pageSize, let last = page.last {
                    cursor = last.id  // the next page
                } else if ranThisPass {
                    (cursor, ranThisPass) = (nil, false)  // another pass
                } else {
                    return
                }
                continue
            }
            ranThisPass = true
            let results = try await runConcurrently(operations)
            for (id, result) in results {
                counts[id, default: 0] += 1
                switch result {
                case .done, .stale: break
                case .refused: parked.insert(id)
                case .pathTaken: parked.insert(id)  // planned again once the feed said who has the path
                }
                if counts[id, default: 0] >= Self.operationsPerItem {
                    logger.notice("an item did not settle this round", metadata: ["item": "\(id)"])
                    parked.insert(id)
                }
            }
        }
    }

    /// The items of `page` (items not in step), and the items holding the paths their decisions ask about.
    func planningSet(_ page: [StoredItem]) throws -> [StoredItem] {
        let keys = SyncPlanner.Context.askedKeys(page.map(\.observation))
        let ids = Set(page.map(\.id))
        return page + (try state.records(withRemoteKeys: keys)).filter { !ids.contains($0.id) }
    }

    /// The planner's context for deciding on `item` alone: the items holding the paths it asks about, and its
    /// earlier versions when it asks for them.
    func context(for item: ItemObservation) throws -> SyncPlanner.Context {
        let keys = SyncPlanner.Context.askedKeys([item])
        var context = SyncPlanner.Context.empty
        if !keys.isEmpty {
            context = SyncPlanner.Context([item] + (try state.records(withRemoteKeys: keys)).map(\.observation))
        }
        context.earlierVersions = try earlierVersions(of: [item])
        return context
    }

    /// The earlier versions the planner asks for (``SyncPlanner/asksEarlierVersions(_:)``) of `items`, as far as
    /// the item's versions were heard of (an item edited since its creation is read whole, history included).
    func earlierVersions(of items: [ItemObservation]) throws -> [ItemID: [ChunkHash: VersionID]] {
        var found: [ItemID: [ChunkHash: VersionID]] = [:]
        for item in items where SyncPlanner.asksEarlierVersions(item) {
            for version in try state.otherVersions(of: item.id) where !version.isConflict {
                found[item.id, default: [:]][version.contentHash] = version.id
            }
        }
        return found
    }

    /// Runs `operations`, at most ``operationWindow`` at a time.
    private func runConcurrently(_ operations: [SyncOperation]) async throws -> [(ItemID, OperationResult)] {
        try await withThrowingTaskGroup(of: (ItemID, OperationResult).self) { group in
            var results: [(ItemID, OperationResult)] = []
            var next = 0
            var running = 0
            while next < operations.count || running > 0 {
                if next < operations.count, running < Self.operationWindow {
                    let operation = operations[next]
                    next += 1
                    running += 1
                    group.addTask { (operation.itemID, try await self.run(operation)) }
                } else if let result = try await group.next() {
                    running -= 1
                    results.append(result)
                }
            }
            return results
        }
    }

    /// Runs one planned operation in its item's lane, if it is still what the planner would do once the lane is
    /// held. A new item's record, once created, is followed in the same lane by its content's upload when that is
    /// what the planner decides next (rather than in the round's next pass, planned again with the page).
    func run(_ operation: SyncOperation) async throws -> OperationResult {
        let id = operation.itemID
        return try await inLane(id) {
            guard let item = try state.record(id) else { return .stale }
            let decided = SyncPlanner.decide(
                item.observation, context: try context(for: item.observation), configuration: planner.configuration)
            guard decided == operation else { return .stale }
            let result = try await perform(operation, on: item)
            guard case .createRemote = operation, case .done = result, let created = try state.record(id) else {
                return result
            }
            let next = SyncPlanner.decide(
                created.observation, context: try context(for: created.observation),
                configuration: planner.configuration)
            guard let next, case .uploadContent = next else { return result }
            return try await perform(next, on: created)
        }
    }

    /// Performs `operation` on `item` (in its lane) and records its outcome; the item's own failures are recorded on
    /// it, a changed local copy is observed again, and only a failure to reach the service or the disk is thrown.
    func perform(_ operation: SyncOperation, on item: StoredItem) async throws -> OperationResult {
        do {
            try await execute(operation, on: item)
            return .done
        } catch is LocalCopyChanged {
            try observeLocalCopy(of: item.id)
            return .stale
        } catch is ContentChangedWhileRead {
            return .stale  // a writer got in; read again
        } catch let error as ProtocolError where error.code == .pathCollision {
            return .pathTaken
        } catch let error as ProtocolError where error.code != .internalError {
            logger.warning("an operation was refused", metadata: ["operation": "\(operation)", "error": "\(error)"])
            if var refused = try state.record(item.id) {
                if case .download = operation {
                    refused.downloadError = ItemError(error)
                } else {
                    refused.uploadError = ItemError(error)
                }
                try await commit([RecordWrite(refused, inStep: false)])
            }
            return .refused
        }
    }

    /// Observes the local copy of one item again (in its lane), after an operation found it other than planned.
    func observeLocalCopy(of id: ItemID) throws {
        guard var item = try state.record(id) else { return }
        let old = item.observation
        guard let path = old.local?.path ?? old.synced?.path else { return }
        let kind = old.local?.kind ?? old.synced?.kind ?? .file
        let url = layout.url(of: path)
        let found: LocalFileIdentity?
        do {
            found = try scanner.identity(of: url, kind: kind)
        } catch  where !disk.exists(url) {
            found = nil  // gone; a copy that is there but cannot be looked at is not taken for deleted
        }
        if let identity = found {
            var view = LocalView(path: path, kind: kind, identity: identity)
            if let previous = old.local, identity == previous.identity, !previous.identity.isRacy {
                view.contentHash = previous.contentHash
            }
            item.observation.local = view
        } else {
            // Gone, unless the whole folder is another (a disk unmounted under the engine): not a user's deletion.
            try checkFolder()
            item.observation.local = nil
        }
        if item.observation != old { try store(item) }
    }
}
