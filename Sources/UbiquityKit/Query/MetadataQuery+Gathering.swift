import Foundation
import SyncEngine
import UbiquityProtocol

extension MetadataQuery {
    /// How many engine records one gathering task turns into results (and how many between two
    /// gathering-progress notifications).
    static let gatheringChunk = 16_384

    /// One run of the query: every container's session opened, the results gathered from what the engines know,
    /// then each container's engine events followed until the run is cancelled.
    static func run(_ query: WeakQuery, ubiquity: Ubiquity, spec: QuerySpec, generation: Int) async {
        let containers = ubiquity.configuration.containers
        let sessions = await withTaskGroup(of: (ContainerID, ContainerSession?).self) { group in
            for container in containers {
                group.addTask { (container, try? await ubiquity.session(for: container)) }
            }
            var sessions: [ContainerID: ContainerSession] = [:]
            for await (container, session) in group { sessions[container] = session }
            return sessions
        }
        await withTaskGroup(of: Void.self) { group in
            // Listen before reading what the engines know, so that no change falls in between; what is heard while
            // gathering waits (unbounded) and is applied after it.
            var feeds: [ContainerID: AsyncStream<SyncEvent>] = [:]
            for (container, session) in sessions {
                let events = session.events()
                let (feed, continuation) = AsyncStream.makeStream(of: SyncEvent.self, bufferingPolicy: .unbounded)
                group.addTask {
                    for await event in events { continuation.yield(event) }
                    continuation.finish()
                }
                feeds[container] = feed
            }
            let ordered = containers.compactMap { container in sessions[container] }
            guard await gather(query, from: ordered, spec: spec, generation: generation) else {
                return group.cancelAll()
            }
            for container in containers {
                let opened = sessions[container].flatMap { session in feeds[container].map { (session, $0) } }
                group.addTask {
                    await follow(
                        query, container: container, opened: opened, ubiquity: ubiquity, spec: spec,
                        generation: generation)
                }
            }
        }
    }

    /// Turns what the engines know into the first results — in chunks, side by side, each sorted, then merged —
    /// telling progress as chunks finish; `false` when the run is over.
    private static func gather(
        _ query: WeakQuery, from sessions: [ContainerSession], spec: QuerySpec, generation: Int
    ) async -> Bool {
        let runs = await withTaskGroup(of: [QuerySort.Entry].self) { group -> [[QuerySort.Entry]]? in
            for session in sessions {
                let records = session.items()
                for start in stride(from: 0, to: records.count, by: gatheringChunk) {
                    let chunk = records[start..<min(start + gatheringChunk, records.count)]
                    group.addTask { spec.sort.sorted(spec.results(of: chunk, in: session)) }
                }
            }
            var runs: [[QuerySort.Entry]] = []
            var found = 0
            for await run in group {
                runs.append(run)
                found += run.count
                guard !Task.isCancelled, let query = query.query else { return nil }
                query.post(.event(.gatheringProgress(found), generation: generation))
            }
            return runs
        }
        guard let runs, !Task.isCancelled else { return false }
        return query.query?.finishGathering(sorted: spec.sort.merged(runs), generation: generation) ?? false
    }

    /// Follows one container's engine: each event's item recomputed and heard. When the session closes (an account
    /// change, sign-out) the container is opened again as soon as it can be — right away, after the next identity
    /// change when signed out, or a few seconds later when its engine cannot be reached — and its results replaced
    /// with what the engine knows then; a container that cannot be opened has no results.
    private static func follow(
        _ query: WeakQuery, container: ContainerID, opened: (ContainerSession, AsyncStream<SyncEvent>)?,
        ubiquity: Ubiquity, spec: QuerySpec, generation: Int
    ) async {
        var identities = ubiquity.identityChanges().makeAsyncIterator()
        var current = opened
        while !Task.isCancelled {
            if let (session, events) = current {
                let folderPath = session.layout.folder.path
                for await event in events {
                    guard let query = query.query else { return }
                    query.heard(event, in: session, folderPath: folderPath, spec: spec, generation: generation)
                }
            }
            guard !Task.isCancelled, !ubiquity.isShutDown else { return }
            do {
                let session = try await ubiquity.session(for: container)
                let events = session.events()
                let items = spec.results(of: session.items(), in: session)
                guard let query = query.query else { return }
                query.replace(container: container, with: items, generation: generation)
                current = (session, events)
            } catch {
                guard let live = query.query else { return }
                live.replace(container: container, with: [], generation: generation)
                current = nil
                if (error as? UbiquityError)?.code == .notSignedIn {
                    guard await identities.next() != nil else { return }
                } else {
                    try? await Task.sleep(for: .seconds(5))
                }
            }
        }
    }

    /// The gathered results are in: tells did-finish-gathering, then what was heard meanwhile.
    func finishGathering(sorted entries: [QuerySort.Entry], generation: Int) -> Bool {
        let drain = state.withLock { state -> Bool? in
            guard let ordered = state.machine.finishGathering(sorted: entries, generation: generation) else {
                return nil
            }
            let posted = state.post(.event(.didFinishGathering(ordered), generation: generation))
            let action = state.machine.gathered(generation: generation)
            return perform(action, generation: generation, in: &state) || posted
        }
        guard let drain else { return false }
        if drain { scheduleDrain() }
        return true
    }

    /// Records what an engine event did to an item — read from the session as it is now, so that events heard late
    /// never take an item back to an older state.
    func heard(
        _ event: SyncEvent, in session: ContainerSession, folderPath: String, spec: QuerySpec, generation: Int
    ) {
        let id: ItemID
        let path: ItemPath
        switch event {
        case .itemChanged(let record):
            (id, path) = (record.id, record.path)
        case .itemRemoved(let removed, let at), .progress(let removed, let at, _):
            (id, path) = (removed, at)
        default:
            return
        }
        let current = session.item(at: path).flatMap { $0.id == id ? $0 : nil }
        if current == nil, case .itemChanged = event { return }  // moved or removed since: a later event tells
        if current == nil, case .progress = event { return }
        let item = current.flatMap {
            spec.result($0, transfer: session.transfer(of: id), layout: session.layout, folderPath: folderPath)
        }
        let drain = state.withLock { state in
            let action = state.machine.heard(id, item, generation: generation)
            return perform(action, generation: generation, in: &state)
        }
        if drain { scheduleDrain() }
    }

    /// A container's results are now `items`.
    func replace(container: ContainerID, with items: [MetadataItem], generation: Int) {
        let drain = state.withLock { state in
            let action = state.machine.replace(container: container.string, with: items, generation: generation)
            return perform(action, generation: generation, in: &state)
        }
        if drain { scheduleDrain() }
    }
}
