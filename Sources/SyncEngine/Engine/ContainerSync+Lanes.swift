import UbiquityProtocol

/// One lane per item: at most one operation on an item at a time — a round's upload or apply of it, a download on
/// demand, an eviction, a resolution — while operations on different items go on side by side. An operation
/// re-reads what it acts on inside its lane, so what it decided from is still true when it acts.
struct ItemLanes {
    /// The items whose lane is taken.
    var busy: Set<ItemID> = []
    /// Who waits for each lane, first come first served, each under a ticket of its own (so a cancelled waiter can
    /// leave the queue).
    var waiting: [ItemID: [(ticket: UInt64, continuation: CheckedContinuation<Void, any Error>)]] = [:]
    /// The next waiter's ticket.
    var nextTicket: UInt64 = 0

    /// The lanes the current task holds (so an operation that calls another on the same item does not wait for
    /// itself).
    @TaskLocal static var held: Set<ItemID> = []
}

/// Record writes of operations waiting to be committed together (``ContainerSync/commit(_:)-async``).
struct GroupedWrites {
    /// The writes waiting, in the order they came, each under its caller's ticket.
    var waiting: [(ticket: UInt64, writes: [RecordWrite])] = []
    /// The callers waiting for their writes' outcome (all but the one that commits them).
    var continuations: [UInt64: CheckedContinuation<[RecordWrite], any Error>] = [:]
    /// Whether a caller will commit what waits.
    var hasLeader = false
    /// The outcome of the committing caller's own writes when a synchronous commit took them first.
    var leaderOutcome: (ticket: UInt64, outcome: Result<[RecordWrite], any Error>)?
    /// The next caller's ticket.
    var nextTicket: UInt64 = 0
}

extension ContainerSync {
    /// Runs `work` holding the lane of item `id`: after the operations on it that came first, before those that
    /// come later. A task already holding the lane runs `work` at once.
    /// - Throws: `CancellationError` when the task is cancelled while it waits for the lane (`work` does not run);
    ///   what `work` throws.
    func inLane<Value: Sendable>(
        _ id: ItemID, _ work: () async throws -> Value
    ) async throws -> Value {
        if ItemLanes.held.contains(id) { return try await work() }
        try await takeLane(id)
        defer { leaveLane(id) }
        return try await ItemLanes.$held.withValue(ItemLanes.held.union([id])) { try await work() }
    }

    private func takeLane(_ id: ItemID) async throws {
        if lanes.busy.insert(id).inserted { return }
        // Handed over by `leaveLane` (the lane stays busy): no check-then-act between the wake-up and the work.
        // A waiter whose task is cancelled leaves the queue at once: an open waiting behind an operation stuck on an
        // unreachable service, or a round cancelled by the engine's shutdown, must not wait for that operation.
        let ticket = lanes.nextTicket
        lanes.nextTicket += 1
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                lanes.waiting[id, default: []].append((ticket, continuation))
            }
        } onCancel: {
            // On the actor, like `leaveLane`: whichever comes first takes the waiter out, so it is resumed once.
            Task { await self.leaveQueue(id, ticket: ticket) }
        }
    }

    /// Takes a cancelled waiter out of the lane's queue and wakes it with `CancellationError`; nothing when the lane
    /// was handed to it already (it runs, and its work sees the cancellation).
    private func leaveQueue(_ id: ItemID, ticket: UInt64) {
        guard var queue = lanes.waiting[id], let index = queue.firstIndex(where: { $0.ticket == ticket }) else {
            return
        }
        let waiter = queue.remove(at: index)
        lanes.waiting[id] = queue.isEmpty ? nil : queue
        waiter.continuation.resume(throwing: CancellationError())
    }

    private func leaveLane(_ id: ItemID) {
        guard var queue = lanes.waiting[id], !queue.isEmpty else {
            lanes.busy.remove(id)
            return
        }
        let next = queue.removeFirst()
        lanes.waiting[id] = queue.isEmpty ? nil : queue
        next.continuation.resume()
    }
}
