import UbiquityProtocol

/// One lane per item: at most one operation on an item at a time — a round's upload or apply of it, a download on
/// demand, an eviction, a resolution — while operations on different items go on side by side. An operation
/// re-reads what it acts on inside its lane, so what it decided from is still true when it acts.
struct ItemLanes {
    /// The items whose lane is taken.
    var busy: Set<ItemID> = []
    /// Who waits for each lane, first come first served.
    var waiting: [ItemID: [CheckedContinuation<Void, Never>]] = [:]

    /// The lanes the current task holds (so an operation that calls another on the same item does not wait for
    /// itself).
    @TaskLocal static var held: Set<ItemID> = []
}

extension ContainerSync {
    /// Runs `work` holding the lane of item `id`: after the operations on it that came first, before those that
    /// come later. A task already holding the lane runs `work` at once.
    func inLane<Value: Sendable>(
        _ id: ItemID, _ work: () async throws -> Value
    ) async throws -> Value {
        if ItemLanes.held.contains(id) { return try await work() }
        await takeLane(id)
        defer { leaveLane(id) }
        return try await ItemLanes.$held.withValue(ItemLanes.held.union([id])) { try await work() }
    }

    private func takeLane(_ id: ItemID) async {
        if lanes.busy.insert(id).inserted { return }
        // Handed over by `leaveLane` (the lane stays busy): no check-then-act between the wake-up and the work.
        await withCheckedContinuation { lanes.waiting[id, default: []].append($0) }
    }

    private func leaveLane(_ id: ItemID) {
        guard var queue = lanes.waiting[id], !queue.isEmpty else {
            lanes.busy.remove(id)
            return
        }
        let next = queue.removeFirst()
        lanes.waiting[id] = queue.isEmpty ? nil : queue
        next.resume()
    }
}
