import Synchronization
import UbiquityProtocol

/// Where the drafts of versions being uploaded are kept: this process's memory (``DraftBoard``, the embedded
/// default's), or the database several nodes share (``PostgresDraftStore``), so that a device may follow a draft
/// through any node.
protocol DraftStore: Sendable {
    /// Appends `request`'s chunks to the draft of `version` of `item`, which holds `request.from` chunks (0 begins
    /// it, replacing a draft of another version).
    /// - Returns: The draft's length now (it stops growing at ``DraftPage/draftLimit`` chunks).
    /// - Throws: ``ProtocolError/Code/draftOutOfStep`` when the draft does not hold `request.from` chunks.
    func append(_ request: DraftAppendRequest, to version: VersionID, of item: ItemID, in container: ContainerKey)
        async throws -> Int
    /// The chunks of the draft of `version` of `item` from the `from`th on (at most a page); `nil` when there is
    /// no such draft.
    func page(of version: VersionID, of item: ItemID, in container: ContainerKey, from: Int) async throws
        -> DraftPage?
    /// A version of `item` was committed, or it was deleted: its draft ends (now, or it did in the commit's own
    /// transaction).
    func committed(_ item: ItemID, in container: ContainerKey)
    /// Ends the draft of `item` (one grown while a version of the item was being committed).
    func end(_ item: ItemID, in container: ContainerKey) async throws
}

/// The drafts of versions being uploaded (``DraftAppendRequest``): for each item, the chunks of the version its
/// device is uploading, in order, as far as they have gone up.
///
/// A draft is a hint kept in this process's memory: the commit of any version of the item (or its deletion) ends it,
/// and so do an hour without news and the board's bounds — a draft stops growing at ``DraftPage/draftLimit``
/// chunks, an account's drafts hold at most as many together (its least recently grown go first), and all drafts at
/// most ``chunkLimit`` (the least recently grown go first). Losing one costs a device only the head start it gave;
/// the version's commit is what counts.
final class DraftBoard: DraftStore {
    /// An item's draft.
    struct Draft {
        let version: VersionID
        var chunks: [ChunkReference]
        var total: Int64?
        var grown: ContinuousClock.Instant
    }

    struct Key: Hashable {
        let container: ContainerKey
        let item: ItemID
    }

    private struct Board {
        var drafts: [Key: Draft] = [:]
        /// The chunks all drafts hold, and each account's.
        var held = 0
        var heldByAccount: [AccountID: Int] = [:]

        mutating func remove(_ key: Key) {
            guard let draft = drafts.removeValue(forKey: key) else { return }
            held -= draft.chunks.count
            heldByAccount[key.container.account, default: 0] -= draft.chunks.count
            if heldByAccount[key.container.account] == 0 { heldByAccount[key.container.account] = nil }
        }
    }

    /// The most chunks all drafts hold together.
    let chunkLimit: Int
    /// How long a draft that does not grow is kept.
    let idleLimit: Duration
    private let board = Mutex(Board())

    init(chunkLimit: Int = 4 * DraftPage.draftLimit, idleLimit: Duration = .seconds(3_600)) {
        self.chunkLimit = chunkLimit
        self.idleLimit = idleLimit
    }

    /// Appends `request`'s chunks to the draft of `version` of `item`, which holds `request.from` chunks (0 begins
    /// it, replacing a draft of another version).
    /// - Returns: The draft's length now (it stops growing at ``DraftPage/draftLimit`` chunks).
    /// - Throws: ``ProtocolError/Code/draftOutOfStep`` when the draft does not hold `request.from` chunks.
    func append(_ request: DraftAppendRequest, to version: VersionID, of item: ItemID, in container: ContainerKey)
        throws(ProtocolError) -> Int
    {
        let key = Key(container: container, item: item)
        let now = ContinuousClock.now
        return try board.withLock { board throws(ProtocolError) -> Int in
            // Taken out while it grows, so that its chunks are not copied.
            let existing = board.drafts[key].flatMap { $0.version == version ? $0 : nil }
            let held = existing?.chunks.count ?? 0
            guard held == request.from else {
                throw ProtocolError(
                    .draftOutOfStep, "the draft of \(version) holds \(held) chunks, not \(request.from)")
            }
            board.remove(key)
            var draft = existing ?? Draft(version: version, chunks: [], grown: now)
            let added = request.chunks.prefix(max(0, DraftPage.draftLimit - draft.chunks.count))
            draft.chunks.append(contentsOf: added)
            draft.total = request.total ?? draft.total
            draft.grown = now
            let account = container.account
            board.drafts[key] = draft
            board.held += draft.chunks.count
            board.heldByAccount[account, default: 0] += draft.chunks.count
            evict(&board, now: now, keeping: key)
            return board.drafts[key]?.chunks.count ?? 0
        }
    }

    /// The chunks of the draft of `version` of `item` from the `from`th on (at most a page); `nil` when there is no
    /// such draft.
    func page(of version: VersionID, of item: ItemID, in container: ContainerKey, from: Int) -> DraftPage? {
        board.withLock { board in
            guard let draft = board.drafts[Key(container: container, item: item)], draft.version == version else {
                return nil
            }
            let start = min(max(0, from), draft.chunks.count)
            let end = min(draft.chunks.count, start + DraftPage.pageLimit)
            return DraftPage(count: draft.chunks.count, chunks: Array(draft.chunks[start..<end]), total: draft.total)
        }
    }

    /// Ends the draft of `item`: a version of it was committed, or it was deleted.
    func end(_ item: ItemID, in container: ContainerKey) {
        board.withLock { $0.remove(Key(container: container, item: item)) }
    }

    func committed(_ item: ItemID, in container: ContainerKey) { end(item, in: container) }

    /// Drops drafts idle too long, then the least recently grown of the account of `key` while it holds too many,
    /// then the least recently grown of all while all hold too many — never `key`'s, which just grew.
    private func evict(_ board: inout Board, now: ContinuousClock.Instant, keeping key: Key) {
        let account = key.container.account
        guard
            board.drafts.count > 1
                && (board.held > chunkLimit || board.heldByAccount[account, default: 0] > DraftPage.draftLimit
                    || board.drafts.values.contains { now - $0.grown >= idleLimit })
        else { return }
        for (other, draft) in board.drafts.sorted(by: { $0.value.grown < $1.value.grown }) where other != key {
            let idle = now - draft.grown >= idleLimit
            let accountOver =
                other.container.account == account && board.heldByAccount[account, default: 0] > DraftPage.draftLimit
            if idle || accountOver || board.held > chunkLimit { board.remove(other) }
        }
    }
}
