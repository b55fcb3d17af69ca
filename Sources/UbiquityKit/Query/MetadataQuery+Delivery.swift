import Foundation

extension MetadataQuery {
    /// Something to post, in order, on the query's queue.
    enum Delivery: Sendable {
        /// An event of the run `generation`.
        case event(Event, generation: Int)
        /// The run `generation`'s pending changes, applied to the results there and then told.
        case flush(generation: Int)
    }

    /// What one step of a drain does.
    private enum Step {
        case finished
        case skip
        case tell(Event)
    }

    /// Does what the state machine asked for about changes of the run `generation`; returns whether a drain must be
    /// scheduled (call ``scheduleDrain()`` once the lock is released).
    func perform(_ action: QueryStateMachine.Action, generation: Int, in state: inout State) -> Bool {
        switch action {
        case .none:
            return false
        case .flush:
            return state.post(.flush(generation: generation))
        case .flushAfter(let interval):
            // The batching interval's timer: changes heard until it ends go out together.
            let clock = state.clock
            Task { [weak self] in
                try? await clock.sleep(for: interval)
                self?.post(.flush(generation: generation))
            }
            return false
        }
    }

    /// Queues `delivery` and makes sure a drain will post it.
    func post(_ delivery: Delivery) {
        if state.withLock({ $0.post(delivery) }) { scheduleDrain() }
    }

    /// Starts a drain of the outbox on ``operationQueue``, or the query's own queue.
    func scheduleDrain() {
        if let queue = state.withLock({ $0.operationQueue }) {
            // Foundation on Linux runs the main operation queue's operations off the main thread; the main dispatch
            // queue is the main thread's, as Apple's main operation queue is.
            if queue === OperationQueue.main {
                DispatchQueue.main.async { self.drain() }
            } else {
                queue.addOperation { self.drain() }
            }
        } else {
            ownQueue.async { self.drain() }
        }
    }

    /// Posts what the outbox holds, oldest first — one drain at a time, so notifications keep their order on any
    /// queue. A flush applies the pending changes to the results here, just before telling of them.
    private func drain() {
        while true {
            let step = state.withLock { state -> Step in
                guard let next = state.takeNext() else {
                    state.draining = false
                    return .finished
                }
                switch next {
                case .event(let event, let generation):
                    guard generation == state.machine.generation, state.machine.phase != .stopped else { return .skip }
                    return .tell(event)
                case .flush(let generation):
                    guard let update = state.machine.flush(generation: generation) else { return .skip }
                    return .tell(.didUpdate(added: update.added, changed: update.changed, removed: update.removed))
                }
            }
            switch step {
            case .finished: return
            case .skip: continue
            case .tell(let event): tell(event)
            }
        }
    }
}

extension MetadataQuery.State {
    /// Queues `delivery`; returns whether a drain must be scheduled (none is under way).
    mutating func post(_ delivery: MetadataQuery.Delivery) -> Bool {
        outbox.append(delivery)
        guard !draining else { return false }
        draining = true
        return true
    }

    /// The oldest delivery not yet taken.
    mutating func takeNext() -> MetadataQuery.Delivery? {
        guard outboxStart < outbox.count else {
            outbox.removeAll(keepingCapacity: true)
            outboxStart = 0
            return nil
        }
        let next = outbox[outboxStart]
        outboxStart += 1
        if outboxStart >= 256, outboxStart * 2 >= outbox.count {
            outbox.removeFirst(outboxStart)
            outboxStart = 0
        }
        return next
    }
}
