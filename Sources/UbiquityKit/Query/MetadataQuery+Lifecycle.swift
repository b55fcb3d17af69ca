import Foundation

extension MetadataQuery {
    /// Starts the query: did-start-gathering, the containers' sessions opened (and their engines started or
    /// reached), the results gathered from what the engines know, did-finish-gathering, then a did-update for each
    /// change. Returns `false` when the query was already started, or stopped.
    @discardableResult
    public func start() -> Bool {
        let drain = state.withLock { state -> Bool? in
            guard state.machine.phase == .idle else { return nil }
            return launch(&state)
        }
        guard let drain else { return false }
        if drain { scheduleDrain() }
        return true
    }

    /// Stops the query for good: no more notifications (once those being posted are out), ``updates()`` ends, and
    /// the results stay as they were. Make a new query to search again.
    public func stop() {
        let run = state.withLock { state -> Task<Void, Never>? in
            state.machine.stop()
            state.outbox.removeAll()
            state.outboxStart = 0
            defer { state.run = nil }
            return state.run
        }
        run?.cancel()
        broadcast.finish()
    }

    /// Holds updates — results and notifications stay as they are, while changes are still heard — until a matching
    /// ``enableUpdates()``; calls nest. Apple's advice holds: call it on ``operationQueue`` before walking the
    /// results, so none changes under you.
    public func disableUpdates() {
        state.withLock { $0.machine.disableUpdates() }
    }

    /// How many items' changes the query heard and has not told yet (held by ``disableUpdates()``, or waiting for
    /// their batch): a test's way to know the query heard of a change before it goes on.
    var untoldChangeCount: Int { state.withLock { $0.machine.pendingCount } }

    /// Matches a ``disableUpdates()``; once all are, the changes held meanwhile go out at once, in one did-update.
    public func enableUpdates() {
        let drain = state.withLock { state in
            let action = state.machine.enableUpdates()
            return perform(action, generation: state.machine.generation, in: &state)
        }
        if drain { scheduleDrain() }
    }

    /// Starts a run (the first, or again with a new setup): the results emptied, the previous run cancelled.
    /// Returns whether a drain must be scheduled.
    func launch(_ state: inout State) -> Bool {
        let sort = QuerySort(state.sortDescriptors)
        guard let generation = state.machine.start(sort: sort) else { return false }
        let spec = QuerySpec(scopes: Set(state.scopes), predicate: state.predicate, sort: sort, types: types)
        state.run?.cancel()
        let query = WeakQuery(query: self)
        let ubiquity = self.ubiquity
        // The run: gathering, then following every container's engine, until the query stops, starts another run or
        // goes away.
        state.run = Task { await Self.run(query, ubiquity: ubiquity, spec: spec, generation: generation) }
        return state.post(.event(.didStartGathering, generation: generation))
    }
}
