import Foundation
import UbiquityProtocol

/// The observers: what is on disk and what the service has become the items' ``ItemObservation``s, persisted — never
/// work. The planner works out the work from them (``ContainerSync/settle()``).
extension ContainerSync {
    /// The planner, with the engine's policy.
    var planner: SyncPlanner {
        SyncPlanner(configuration: SyncPlanner.Configuration(eagerDownloadLimit: configuration.eagerDownloadLimit))
    }

    /// Whether the planner has nothing to do for the item (whatever the other items are).
    func isInStep(_ item: StoredItem) -> Bool {
        SyncPlanner.decide(item.observation, context: .empty, configuration: planner.configuration) == nil
    }

    /// Stores `item` (its in-step flag worked out here) and tells listeners; where its local copy's chunks lie and
    /// the record of its current version, when given, are written in the same transaction.
    func store(
        _ item: StoredItem, chunkLocations: [(ChunkHash, LocalChunkLocation)]? = nil,
        currentVersion: VersionRecord? = nil
    ) throws {
        var write = RecordWrite(item, inStep: isInStep(item))
        write.chunkLocations = chunkLocations
        write.currentVersion = currentVersion
        try commit([write])
    }

    /// Applies `writes` in one transaction and tells listeners of those that applied. The operations' writes waiting
    /// to be committed together go first, in the same transaction.
    @discardableResult
    func commit(_ writes: [RecordWrite]) throws -> [RecordWrite] {
        try (commitGrouped(adding: writes) ?? Self.lostOutcome).get()
    }

    /// Applies `writes` as ``commit(_:)`` does, in one transaction with the writes of other operations that reach
    /// this point meanwhile: the first of them lets the others run up to their own writes, then commits them all.
    /// Each caller resumes once its writes are committed (so what it sends or places next comes after its record,
    /// as with ``commit(_:)``), with its own outcome: a group that fails fails alone.
    @discardableResult
    func commit(_ writes: [RecordWrite]) async throws -> [RecordWrite] {
        let ticket = grouped.nextTicket
        grouped.nextTicket += 1
        grouped.waiting.append((ticket, writes))
        guard grouped.hasLeader else {
            grouped.hasLeader = true
            await Task.yield()  // the other operations ready to run reach their writes
            let mine = commitGrouped(adding: nil, leader: ticket)
            grouped.hasLeader = false
            return try (mine ?? Self.lostOutcome).get()
        }
        return try await withCheckedThrowingContinuation { continuation in
            grouped.continuations[ticket] = continuation
        }
    }

    /// Commits the writes waiting (see ``commit(_:)-async``) and `writes`, in one transaction; resumes the waiting
    /// callers, keeps the outcome of a leader's writes that a synchronous commit took with it, and returns the
    /// outcome of `writes` (or of the leader's writes: `leader`).
    private func commitGrouped(
        adding writes: [RecordWrite]?, leader: UInt64? = nil
    ) -> Result<[RecordWrite], any Error>? {
        let waiting = grouped.waiting
        grouped.waiting = []
        var groups = waiting.map(\.writes)
        if let writes { groups.append(writes) }
        if let unreadable, !unreadable.isEmpty {
            groups = groups.map { Self.keepingUnreadableErrors($0, unreadable: unreadable) }
        }
        var outcomes: [Result<[RecordWrite], any Error>] = []
        if !groups.isEmpty {
            do {
                for outcome in try state.write(groups: groups) {
                    outcomes.append(outcome.map { applied in notify(applied) })
                }
            } catch {
                outcomes = groups.map { _ in .failure(error) }
            }
        }
        for ((ticket, _), outcome) in zip(waiting, outcomes) {
            if let continuation = grouped.continuations.removeValue(forKey: ticket) {
                continuation.resume(with: outcome)
            } else {
                grouped.leaderOutcome = (ticket, outcome)  // the leader's, taken by a synchronous commit
            }
        }
        if writes != nil { return outcomes.last }
        guard let leader, let kept = grouped.leaderOutcome, kept.ticket == leader else { return nil }
        grouped.leaderOutcome = nil
        return kept.outcome
    }

    /// What a caller gets if its writes' outcome were ever lost (a bug: every group gets one).
    private static var lostOutcome: Result<[RecordWrite], any Error> {
        .failure(ProtocolError(.internalError, "a grouped write of the state database had no outcome"))
    }

    /// Tells listeners of the writes that applied; returns the writes.
    private func notify(_ applied: [(write: RecordWrite, before: StoredItem?)]) -> [RecordWrite] {
        for (write, before) in applied {
            if let record = write.record {
                let item = record.item
                if before?.item != item { hub.send(.itemChanged(item)) }
            } else if let before {
                hub.send(.itemRemoved(before.id, before.path))
                try? disk.removeItem(at: layout.versions.appendingPathComponent(before.id.string, isDirectory: true))
            }
        }
        return applied.map(\.write)
    }

    /// Stores `item` as ``store(_:chunkLocations:currentVersion:)`` does, committed together with other operations'
    /// writes (``commit(_:)-async``).
    func store(
        _ item: StoredItem, chunkLocations: [(ChunkHash, LocalChunkLocation)]? = nil,
        currentVersion: VersionRecord? = nil
    ) async throws {
        var write = RecordWrite(item, inStep: isInStep(item))
        write.chunkLocations = chunkLocations
        write.currentVersion = currentVersion
        try await commit([write])
    }

    /// Observes the local copies in `scope`: the records are read first, then the disk, and each item's new local
    /// view is stored only while its record is still the one read — an operation that recorded its outcome
    /// meanwhile (a download placed, an eviction) knows better than a scan that may have walked past it. A file found
    /// as new becomes an item only while no item's local copy is at its path.
    /// An item whose record changed between the read and the write is observed again (so a save the scan saw is
    /// not lost behind an operation's outcome), up to a few times: only such items' paths, not the whole scope.
    /// A folder or package that cannot be read leaves what is in it as it was (see ``noteUnreadable(_:within:)``)
    /// and is observed again by each round until it can be.
    func observeLocal(_ scope: ScanScope) async throws {
        var scope = scope
        if case .paths(let paths) = scope, case let known = try unreadablePaths(), !known.isEmpty {
            scope = .paths(paths.union(known.keys.map(\.string)))
        }
        for _ in 0..<4 {
            guard let again = try await observeLocalOnce(scope) else { return }
            scope = again
        }
    }

    /// One observation of `scope`.
    /// - Returns: What to observe again: `nil` when every write applied; the paths of the items whose record changed
    ///   meanwhile, for a scope of paths; everything, for everything.
    private func observeLocalOnce(_ scope: ScanScope) async throws -> ScanScope? {
        let (scanner, folder) = (scanner, layout.folder)
        let known: [StoredItem]
        let scan: LocalScanner.Result
        let roots: Set<String>
        switch scope {
        case .everything:
            return try await observeEverything() ? nil : .everything
        case .paths(let paths):
            roots = Set(paths.map(scanner.itemRoot)).subtracting([""])
            if roots.isEmpty { return nil }
            known = try state.records(atOrBelow: roots)
            scan = try await onDisk { scanner.scan(folder, only: roots) }
        }
        let before = Dictionary(known.map { ($0.id, $0) }) { first, _ in first }
        // What is in a folder or package that could not be read is not known: its items are left as they were.
        var observations = before.filter { !scan.isUnknown($0.value.path) }.mapValues(\.observation)
        LocalObservation.apply(scan.items, to: &observations, newID: { ItemID(uuid: newIdentifier()) })
        var writes: [RecordWrite] = []
        for (id, observation) in observations {
            if let old: StoredItem = before[id] {
                guard old.observation != observation else { continue }
                var updated = old
                updated.observation = observation
                writes.append(RecordWrite(updated, inStep: isInStep(updated), if: .unchanged(old)))
            } else {
                let created = StoredItem(observation)
                writes.append(RecordWrite(created, inStep: isInStep(created), if: .pathUnclaimed))
            }
        }
        let applied = Set(try await commit(writes).map(\.id))
        try await noteUnreadable(scan.unreadable, within: roots)
        var again: Set<String> = []
        for write in writes where !applied.contains(write.id) {
            guard case .unchanged(let old) = write.condition else { continue }
            for path in [old?.observation.local?.path, write.record?.observation.local?.path].compactMap(\.self) {
                again.insert(path.string)
            }
        }
        return again.isEmpty ? nil : .paths(again)
    }

    /// How many records a write of the start-up comparison carries, and how many paths a look-up of records asks.
    static let comparisonBatch = 1_024

    /// Observes the whole container a folder at a time (``FolderComparison``): each folder's records beside its
    /// entries (and its files no item can claim made new items), then the records of folders no longer on disk,
    /// then what the folders left (moves across folders, other new items). What is held at once is a folder's records and entries and what changed, not the container; the
    /// writes go in batches, each only while the record is still the one read.
    /// - Returns: `false` when some item's record changed meanwhile.
    private func observeEverything() async throws -> Bool {
        let (scanner, folder) = (scanner, layout.folder)
        var comparison = FolderComparison()
        var writes: [RecordWrite] = []
        var (checked, confirmed) = (0, 0)
        func flush(_ force: Bool = false) throws {
            guard force || writes.count >= Self.comparisonBatch else { return }
            confirmed += try commit(writes).filter { if case .unchanged = $0.condition { true } else { false } }.count
            writes = []
        }
        func update(_ old: StoredItem, _ observation: ItemObservation) {
            var updated = old
            updated.observation = observation
            writes.append(RecordWrite(updated, inStep: isInStep(updated), if: .unchanged(old)))
            checked += 1
        }
        // The folders on disk, from the container's own, each beside the records of the items at its entries.
        var visited: Set<String> = [""]
        var folders: [(relative: String, path: String)] = [("", "")]
        // The folders and packages that could not be read: the items in them are left as they were.
        var unreadable: [ItemPath: String] = [:]
        func isBelowUnreadable(_ path: String) -> Bool {
            unreadable.keys.contains { path.hasPrefix($0.string + "/") }
        }
        while let (relative, path) = folders.popLast() {
            let disk = disk
            let listing = try await onDisk { () throws -> Result<FolderListing, any Error> in
                do {
                    return .success(try scanner.scanFolder(folder, relative: relative))
                } catch  where !relative.isEmpty {
                    // Removed since its parent was listed: nothing of it is here, as a whole scan after would find.
                    if !disk.exists(folder.appendingPathComponent(relative, isDirectory: false)) {
                        return .success(([], [], [:]))
                    }
                    return .failure(error)
                }
            }
            let found: FolderListing
            switch listing {
            case .success(let listed): found = listed
            case .failure(let error):
                if let folder = try? ItemPath(path) { unreadable[folder] = String(describing: error) }
                continue
            }
            unreadable.merge(found.unreadable) { _, later in later }
            let known = Dictionary(
                try state.records(directlyIn: path).filter { found.unreadable[$0.path] == nil }.map { ($0.id, $0) }
            ) { first, _ in first }
            for observation in comparison.compare(known.values.map(\.observation), with: found.entries) {
                if let old = known[observation.id] { update(old, observation) }
            }
            // The files no item can claim at the end are new items now, not carried there (at a first start, all).
            let new = try state.claimedByNone(comparison.leftInFolder)
            for observation in comparison.createNow(new, newID: { ItemID(uuid: newIdentifier()) }) {
                let item = StoredItem(observation)
                writes.append(RecordWrite(item, inStep: isInStep(item), if: .pathUnclaimed))
            }
            try flush()
            for sub in found.folders.reversed() where visited.insert(sub.path.string).inserted {
                folders.append((sub.relative, sub.path.string))
            }
        }
        // The records of folders not on disk: none of their items is where it was.
        var row: Int64?
        while true {
            let page = try state.itemPaths(after: row, limit: Self.comparisonBatch)
            guard let last = page.last else { break }
            row = last.row
            let away = page.filter { !visited.contains(Self.parent(of: $0.path)) && !isBelowUnreadable($0.path) }
                .map(\.id)
            if !away.isEmpty { _ = comparison.compare(try state.records(away).map(\.observation), with: []) }
        }
        // Moves across folders, then where the service has an item with nothing here, then new items.
        comparison.matchMoves()
        var owners: [ItemPath: ItemID] = [:]
        do {  // the paths asked about are not kept past the question
            let paths = comparison.pathsLeft
            for start in stride(from: 0, to: paths.count, by: Self.comparisonBatch) {
                let asked = paths[start..<min(paths.count, start + Self.comparisonBatch)]
                for record in try state.records(at: Array(asked)) {
                    let o = record.observation
                    guard o.local == nil, o.synced == nil, let remote = o.remote, !remote.isDeleted,
                        owners[remote.path] == nil
                    else { continue }
                    owners[remote.path] = record.id
                }
            }
        }
        let outcome = comparison.finish(remoteOwners: owners)
        for start in stride(from: 0, to: outcome.localViews.count, by: Self.comparisonBatch) {
            let views = outcome.localViews[start..<min(outcome.localViews.count, start + Self.comparisonBatch)]
            let records = Dictionary(try state.records(views.map(\.id)).map { ($0.id, $0) }) { first, _ in first }
            for (id, local) in views {
                guard let old = records[id] else { continue }
                var observation = old.observation
                observation.local = local
                if observation != old.observation { update(old, observation) }
            }
            try flush()
        }
        while case let created = comparison.nextCreated(Self.comparisonBatch, newID: { ItemID(uuid: newIdentifier()) }),
            !created.isEmpty
        {
            for observation in created {
                let item = StoredItem(observation)
                writes.append(RecordWrite(item, inStep: isInStep(item), if: .pathUnclaimed))
            }
            try flush()
        }
        try flush(true)
        try await noteUnreadable(unreadable, within: nil)
        return confirmed == checked
    }

    /// What ``LocalScanner/scanFolder(_:relative:)`` finds of one folder.
    typealias FolderListing = (
        entries: [ScannedItem], folders: [(relative: String, path: ItemPath)], unreadable: [ItemPath: String]
    )

    /// The folder an item path string is an entry of (`""`: the container's own).
    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    /// Follows the container's change feed from the stored token and observes each touched item's record, settling
    /// (``settle()``) what each page brought before the next page is read; the caller settles the last.
    func observeRemoteChanges() async throws {
        var token = try state.value(forKey: Self.feedTokenKey).map(ChangeToken.init)
        while true {
            let page: ChangePage
            do {
                page = try await service.changes(
                    in: container, since: token, limit: 500, chunkBytes: configuration.feedChunkBytes)
            } catch let error as ProtocolError where error.code == .changeTokenExpired {
                token = nil  // the feed was reset: read it again from the start; observing is idempotent
                continue
            }
            heldChunks.replace(with: page.chunks)
            var touched: [ItemID] = []
            var changes: [ItemID: [Change]] = [:]
            let versions = Dictionary(page.versions.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            for change in page.changes {
                if changes[change.itemID] == nil { touched.append(change.itemID) }
                changes[change.itemID, default: []].append(change)
            }
            // The items the page leaves to ask about, asked for together; each is then observed in its lane, from
            // the answer only if its record did not change since before the question (else asked again there: an
            // answer older than an operation's outcome never overwrites it).
            var asked: [ItemID: StoredItem?] = [:]
            var question: [(id: ItemID, have: VersionRecord?)] = []
            let stored = try state.records(byID: touched)
            for id in touched {
                let known = stored[id]
                guard case .ask = knowledge(of: id, known, changes[id] ?? [], versions) else { continue }
                asked.updateValue(known, forKey: id)
                question.append((id, try known.flatMap { _ in try state.currentVersionRecord(of: id) }))
            }
            var answers: [ItemID: ItemDetail] = [:]
            if question.count > 1 {
                for detail in try await service.items(question, in: container) { answers[detail.item.id] = detail }
            }
            // What the page tells without asking again, of items no operation holds, is observed together: one
            // transaction for all, written before anything here waits (so no operation takes their lanes meanwhile).
            var together = ObservedTogether()
            // The records of the items still to be observed, read together; again after anything was written or
            // awaited (until then, only this loop writes the records of items no operation holds).
            // So are the records at the paths of the items heard of for the first time (``note``'s candidates).
            var read: [ItemID: StoredItem]?
            var atPaths: [ItemPath: [StoredItem]] = [:]
            for (index, id) in touched.enumerated() {
                if !lanes.busy.contains(id) || ItemLanes.held.contains(id), !together.touches(id) {
                    if read == nil {
                        let records = try state.records(byID: Array(touched[index...]))
                        let paths = touched[index...].filter { records[$0] == nil }.compactMap { id in
                            answers[id]?.item.path ?? Self.created(changes[id] ?? [], versions)?.item.path
                        }
                        atPaths = Dictionary(grouping: try state.records(at: paths), by: \.path)
                        read = records
                    }
                    let known = read?[id]
                    if let answer = answers[id], let before = asked[id], before == known {
                        try note(answer, into: &together, known: known, atPath: atPaths[answer.item.path] ?? [])
                        continue
                    }
                    switch knowledge(of: id, known, changes[id] ?? [], versions) {
                    case .known: continue
                    case .created(let detail):
                        try note(detail, into: &together, known: known, atPath: atPaths[detail.item.path] ?? [])
                        continue
                    case .ask: break
                    }
                }
                try observe(together)
                together = ObservedTogether()
                read = nil
                try await inLane(id) {
                    let known = try state.record(id)
                    if let answer = answers[id], let before = asked[id], before == known {
                        try observe(answer)
                        return
                    }
                    switch knowledge(of: id, known, changes[id] ?? [], versions) {
                    case .known: break
                    case .created(let detail): try observe(detail)
                    case .ask: try observe(try await detail(of: id))
                    }
                }
            }
            try observe(together)
            token = page.nextToken
            try state.setValue(page.nextToken.string, forKey: Self.feedTokenKey)
            if !page.hasMore { break }
            // What this page brought is moved before the next page is read: a feed that grows as fast as it is read
            // (another device sending thousands of files) would otherwise hold every download until it stopped
            // growing. Acting on a prefix of the feed is what a round at that moment would have done.
            try await settle()
        }
    }

    /// What one page's `changes` of item `id` leave this device to learn.
    enum FeedKnowledge {
        /// Nothing: its record shows them (this device's own new item, heard back: ``shows(_:_:)``).
        case known
        /// A new item whose creation (with its first version, when the page carries its record) is all the page
        /// says of it: what asking would answer as of the page (``created(_:_:)``).
        case created(ItemDetail)
        /// The rest: the service is asked.
        case ask
    }

    /// What one page's `changes` of item `id` (its record `known`) leave this device to learn; `versions` are the
    /// version records the page carries.
    private func knowledge(
        of id: ItemID, _ known: StoredItem?, _ changes: [Change], _ versions: [VersionID: VersionRecord]
    ) -> FeedKnowledge {
        if let known { return Self.shows(changes, known.observation.remote) ? .known : .ask }
        return Self.created(changes, versions).map(FeedKnowledge.created) ?? .ask
    }

    /// Whether `changes` (one page's, of one item) are only the item's creation, with or without its first version,
    /// and the service's record as last heard (`remote`) shows them: this device's own new item, heard back. Nothing
    /// else is taken as known without asking: a commit over a version this device never had makes that version a
    /// conflict version without a change of its own in the feed, so only the item's versions tell it. That holds for
    /// a first version heard back without its creation too: made over none here, it may have been made over another
    /// device's first version, and the read that follows such a commit may have failed.
    static func shows(_ changes: [Change], _ remote: RemoteView?) -> Bool {
        guard let remote, !remote.isDeleted else { return false }
        var created = false
        for change in changes {
            switch change {
            case .itemCreated: created = true
            case .itemChanged(_, let version), .versionAdded(_, let version):
                guard remote.version == version else { return false }
            case .itemMoved, .itemDeleted, .versionResolved, .versionRemoved: return false
            }
        }
        return created
    }

    /// What asking about an item heard of for the first time would answer as of the page, when all `changes` (one
    /// page's) say is that it was made: its path and kind, and no version yet; or that and its first version, made
    /// current, whose record the page carries among `versions` (as it is now, so not taken when it has become a
    /// conflict version since: the current one is then another, named further on in the feed).
    static func created(_ changes: [Change], _ versions: [VersionID: VersionRecord]) -> ItemDetail? {
        guard let first = changes.first, case .itemCreated(let id, let path, let kind) = first else { return nil }
        switch changes.dropFirst().first {
        case nil:
            return ItemDetail(item: ItemRecord(id: id, path: path, kind: kind), versions: [])
        case .versionAdded(id, let version)?:
            guard changes.count == 3, changes[2] == .itemChanged(itemID: id, currentVersion: version),
                let record = versions[version], record.itemID == id, !record.isConflict, !record.isResolved
            else { return nil }
            return ItemDetail(
                item: ItemRecord(id: id, path: path, kind: kind, currentVersion: version), versions: [record])
        default:
            return nil
        }
    }

    /// The service's feed token key in the state database.
    static let feedTokenKey = "feedToken"

    /// The token of the service's feed as far as this device has read it; `nil` before its first read (or when the
    /// state cannot be read, which a round then meets itself).
    nonisolated func feedRead() -> ChangeToken? {
        (try? state.value(forKey: Self.feedTokenKey)).flatMap { $0.map(ChangeToken.init) }
    }

    /// Observes the service's record of an item (call it in the item's lane): its remote view, its versions (told to
    /// listeners and presenters as they change). An item heard of for the first time at the path of a new local
    /// item of the same kind that the service does not have yet is that item made on both sides: it takes over the
    /// local copy (the planner adopts it, or moves it aside when the contents differ).
    func observe(_ detail: ItemDetail) throws {
        var one = ObservedTogether()
        try note(detail, into: &one)
        try observe(one)
    }

    /// Observations worked out and not yet written: each item's writes, in one transaction when written.
    struct ObservedTogether {
        /// What each observed item's record becomes (`nil`: removed), over what the database holds.
        fileprivate var records: [ItemID: StoredItem?] = [:]
        fileprivate var writes: [RecordWrite] = []
        /// Each observed item, with its other versions and whether it was known before.
        fileprivate var observed: [(detail: ItemDetail, item: LocalItem, wasKnown: Bool)] = []

        /// Whether a write here is of item `id`: its record must be read after they are written.
        func touches(_ id: ItemID) -> Bool { records[id] != nil }
    }

    /// Works out what observing `detail` writes (see ``observe(_:)``) over the database and the writes
    /// already in `together`, and adds it there. Call it in the item's lane, or on the actor with the lane free and
    /// `together` written before the next suspension. `known` is the item's record as the database holds it, and
    /// `atPath` the records at the detail's path, when the caller has just read them (`nil`: read here).
    private func note(
        _ detail: ItemDetail, into together: inout ObservedTogether, known read: StoredItem?? = nil,
        atPath: [StoredItem]? = nil
    ) throws {
        let record = detail.item
        let current = detail.versions.first { $0.id == record.currentVersion }
        let view = RemoteView(
            path: record.path, kind: record.kind, version: record.currentVersion, contentHash: current?.contentHash,
            size: current?.size ?? 0, isDeleted: record.isDeleted)
        var writes: [RecordWrite] = []
        var stored: StoredItem
        let known = try together.records[record.id] ?? read ?? state.record(record.id)
        if let known {
            stored = known
        } else {
            guard !record.isDeleted else { return }
            stored = StoredItem(ItemObservation(id: record.id))
            let candidates = try (atPath ?? state.records(at: [record.path])).compactMap { found in
                together.records[found.id] ?? found
            }.filter { !lanes.busy.contains($0.id) }
            let sameOne = LocalObservation.madeHereToo(
                path: record.path, kind: record.kind, among: candidates.map(\.observation)
            )
            .flatMap { id in candidates.first { $0.id == id } }
            if let sameOne {
                stored.observation.local = sameOne.observation.local
                writes.append(RecordWrite(removing: sameOne.id, if: .unchanged(sameOne)))
                together.records[sameOne.id] = .some(nil)
            }
        }
        stored.observation.remote = view
        stored.hasUnresolvedConflicts = detail.versions.contains { $0.isConflict && !$0.isResolved }
        var write = RecordWrite(stored, inStep: isInStep(stored))
        write.currentVersion = current
        writes.insert(write, at: 0)
        together.records[stored.id] = stored
        together.writes += writes
        if !record.isDeleted { together.observed.append((detail, stored.item, known != nil)) }
    }

    /// Writes what `together` holds in one transaction, then records each item's other versions.
    private func observe(_ together: ObservedTogether) throws {
        guard !together.writes.isEmpty else { return }
        try commit(together.writes)
        for (detail, item, wasKnown) in together.observed {
            let others = detail.versions.filter { $0.id != detail.item.currentVersion }
            try recordOtherVersions(others, of: item, wasKnown: wasKnown)
        }
    }
}
