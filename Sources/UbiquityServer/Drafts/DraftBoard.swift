import Synchronization
import UbiquityProtocol

/// The drafts of versions being uploaded (``DraftAppendRequest``): for each item, the chunks of the version its
/// device is uploading, in order, as far as they have gone up.
///
/// A draft is a hint kept in this process's memory: the commit of any version of the item ends it, and so do an
/// hour without news and the board's bounds (the least recently grown goes first). Losing one costs a device only
/// the head start it gave; the version's commit is what counts.
final class DraftBoard: Sendable {
    /// An item's draft.
    struct Draft {
        let version: VersionID
        var chunks: [ChunkReference]
        var grown: ContinuousClock.Instant
    }

    struct Key: Hashable {
        let container: ContainerKey
        let item: ItemID
    }

    /// The most chunks all drafts hold together.
    let chunkLimit: Int
    /// How long a draft that does not grow is kept.
    let idleLimit: Duration
    private let drafts = Mutex<[Key: Draft]>([:])

    init(chunkLimit: Int = 2 * DraftPage.draftLimit, idleLimit: Duration = .seconds(3_600)) {
        self.chunkLimit = chunkLimit
        self.idleLimit = idleLimit
    }

    /// Appends `chunks` to the draft of `version` of `item`, which holds `from` chunks (0 begins it, replacing a
    /// draft of another version).
    /// - Returns: The draft's length now (it stops growing at ``DraftPage/draftLimit`` chunks).
    /// - Throws: ``ProtocolError/Code/draftOutOfStep`` when the draft does not hold `from` chunks.
    func append(
        _ chunks: [ChunkReference], from: Int, to version: VersionID, of item: ItemID, in container: ContainerKey
    ) throws(ProtocolError) -> Int {
        let key = Key(container: container, item: item)
        let now = ContinuousClock.now
        return try drafts.withLock { drafts throws(ProtocolError) -> Int in
            evictIdle(&drafts, now: now)
            var draft =
                drafts[key].flatMap { $0.version == version ? $0 : nil }
                ?? Draft(version: version, chunks: [], grown: now)
            guard draft.chunks.count == from else {
                throw ProtocolError(
                    .draftOutOfStep, "the draft of \(version) holds \(draft.chunks.count) chunks, not \(from)")
            }
            let room = DraftPage.draftLimit - draft.chunks.count
            draft.chunks.append(contentsOf: chunks.prefix(max(0, room)))
            draft.grown = now
            drafts[key] = draft
            evictOverLimit(&drafts, keeping: key)
            return drafts[key]?.chunks.count ?? 0
        }
    }

    /// The chunks of the draft of `version` of `item` from the `from`th on (at most a page); `nil` when there is no
    /// such draft.
    func page(of version: VersionID, of item: ItemID, in container: ContainerKey, from: Int) -> DraftPage? {
        drafts.withLock { drafts in
            guard let draft = drafts[Key(container: container, item: item)], draft.version == version else {
                return nil
            }
            let start = min(max(0, from), draft.chunks.count)
            let end = min(draft.chunks.count, start + DraftPage.pageLimit)
            return DraftPage(count: draft.chunks.count, chunks: Array(draft.chunks[start..<end]))
        }
    }

    /// Ends the draft of `item`: a version of it was committed.
    func end(_ item: ItemID, in container: ContainerKey) {
        _ = drafts.withLock { $0.removeValue(forKey: Key(container: container, item: item)) }
    }

    /// How many drafts are kept.
    var count: Int { drafts.withLock { $0.count } }

    private func evictIdle(_ drafts: inout [Key: Draft], now: ContinuousClock.Instant) {
        drafts = drafts.filter { now - $0.value.grown < idleLimit }
    }

    /// Drops the least recently grown drafts, other than `key`'s, while all hold more than ``chunkLimit`` chunks.
    private func evictOverLimit(_ drafts: inout [Key: Draft], keeping key: Key) {
        var total = drafts.values.reduce(0) { $0 + $1.chunks.count }
        guard total > chunkLimit else { return }
        for (other, draft) in drafts.sorted(by: { $0.value.grown < $1.value.grown }) where other != key {
            drafts[other] = nil
            total -= draft.chunks.count
            if total <= chunkLimit { return }
        }
    }
}
