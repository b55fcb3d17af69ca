import Foundation

/// One coordinated access from start to finish: ask presenters, take the locks, (the caller runs the accessor),
/// tell presenters what happened, release the locks.
final class CoordinatedAccess: @unchecked Sendable {
    // @unchecked Sendable: an access is driven by one thread at a time — the one that acquires, then (for
    // asynchronous coordination, after `transfer(to:)`) the one that runs the accessor and finishes.

    /// An item to access.
    struct Item: Sendable {
        var url: URL
        /// The URL handed to the accessor.
        var accessURL: URL
        /// Canonical path.
        var path: String
        /// Lock key: the canonical path, or the package containing it.
        var key: String
        var isWrite: Bool
        var reading: FileCoordinator.ReadingOptions = []
        var writing: FileCoordinator.WritingOptions = []

        init(reading url: URL, options: FileCoordinator.ReadingOptions) throws(FileCoordinationError) {
            let resolve = options.contains(.resolvesSymbolicLink)
            path = try CoordinationPath.canonical(url, resolvingItem: resolve)
            key = CoordinationPath.lockKey(forCanonical: path)
            self.url = url
            accessURL = resolve ? URL(fileURLWithPath: path) : url
            isWrite = false
            reading = options
        }

        init(writing url: URL, options: FileCoordinator.WritingOptions) throws(FileCoordinationError) {
            path = try CoordinationPath.canonical(url)
            key = CoordinationPath.lockKey(forCanonical: path)
            self.url = url
            accessURL = url
            isWrite = true
            writing = options
        }

        var asksPresenters: Bool { isWrite || !reading.contains(.immediatelyAvailableMetadataOnly) }
    }

    private enum Relation { case item, ancestor, descendant }

    private struct Related {
        var registered: FilePresenterRegistry.Registered
        var relations: [(item: Int, relation: Relation)]
    }

    let coordinator: FileCoordinator
    let items: [Item]
    let cancellation = CoordinationCancellation()
    private var thread: Int32
    private var held: [(key: String, fd: Int32?)] = []
    private var related: [Related] = []
    private let handshake = PresenterHandshake()
    private var existedBefore: [Bool] = []
    private var writeKeys: [String] { items.filter(\.isWrite).map(\.key) }

    init(coordinator: FileCoordinator, items: [Item]) {
        self.coordinator = coordinator
        self.items = items
        thread = LinuxSystem.currentThreadID()
    }

    // MARK: Acquiring

    /// Asks presenters, then takes every lock; on failure nothing is held and presenters are given their items back.
    func acquire() throws(FileCoordinationError) {
        let configuration = coordinator.configuration
        thread = LinuxSystem.currentThreadID()
        coordinator.register(cancellation)
        do throws(FileCoordinationError) {
            try askPresenters(timeout: configuration.presenterTimeout)
            try CoordinationLockFile.prepare(directory: configuration.lockDirectory)
            let deadline = Date(timeIntervalSinceNow: configuration.accessTimeout)
            let plan = CoordinationLockPlan(items: items.map { ($0.key, $0.isWrite ? .exclusive : .shared) })
            for lock in plan.locks {
                let grant = try CoordinationLockTable.shared.acquire(
                    lock, thread: thread, deadline: deadline, cancellation: cancellation)
                var fd: Int32?
                if grant == .fresh {
                    do throws(FileCoordinationError) {
                        fd = try CoordinationLockFile.acquire(
                            lock, directory: configuration.lockDirectory, deadline: deadline,
                            cancellation: cancellation)
                    } catch {
                        CoordinationLockTable.shared.release(key: lock.key, thread: thread)
                        throw error
                    }
                }
                held.append((lock.key, fd))
            }
        } catch {
            releaseLocks()
            handshake.reacquire()
            coordinator.unregister(cancellation)
            throw error
        }
        coordinator.unregister(cancellation)
        existedBefore = items.map { FileManager.default.fileExists(atPath: $0.key) }
        if !writeKeys.isEmpty { FilePresenterRegistry.shared.beginWrite(writeKeys) }
    }

    /// Hands the held locks to the calling thread (the accessor of an asynchronous coordination runs there).
    func transfer() {
        let now = LinuxSystem.currentThreadID()
        for (key, _) in held { CoordinationLockTable.shared.transfer(key: key, from: thread, to: now) }
        thread = now
    }

    private func askPresenters(timeout: TimeInterval) throws(FileCoordinationError) {
        let own = coordinator.filePresenter.map { ObjectIdentifier($0) }
        for registered in FilePresenterRegistry.shared.registered(excluding: own) {
            var relations: [(Int, Relation)] = []
            for (index, item) in items.enumerated() where item.asksPresenters {
                if registered.path == item.key {
                    relations.append((index, .item))
                } else if CoordinationPath.isAncestor(registered.path, of: item.key) {
                    relations.append((index, .ancestor))
                } else if CoordinationPath.isAncestor(item.key, of: registered.path) {
                    relations.append((index, .descendant))
                }
            }
            if !relations.isEmpty { related.append(Related(registered: registered, relations: relations)) }
        }
        guard !related.isEmpty else { return }
        var requests: [(presenter: any FilePresenter, path: String, steps: [PresenterHandshake.Step])] = []
        for entry in related {
            var steps: [PresenterHandshake.Step] = []
            let relatedItems = entry.relations.map { (items[$0.item], $0.relation) }
            if relatedItems.contains(where: { !$0.0.isWrite && !$0.0.reading.contains(.withoutChanges) }) {
                steps.append(.save)
            }
            var accommodated = false
            for (item, relation) in relatedItems where item.writing.contains(.forDeleting) {
                if relation == .ancestor {
                    steps.append(.accommodateSubitemDeletion(URL(fileURLWithPath: item.key)))
                } else if !accommodated {
                    steps.append(.accommodateDeletion)
                    accommodated = true
                }
            }
            steps.append(relatedItems.contains { $0.0.isWrite } ? .relinquishToWriter : .relinquishToReader)
            requests.append((entry.registered.presenter, entry.registered.path, steps))
        }
        handshake.start(requests)
        try handshake.wait(
            until: Date(timeIntervalSinceNow: timeout), timeout: timeout, cancellation: cancellation)
    }

    // MARK: Finishing

    /// Tells presenters what the accessor did, gives them their items back, and releases the locks.
    func finish(moves: [(from: String, to: String)]) {
        var outcome = FilePresenterRegistry.WriteOutcome()
        var messages: [ObjectIdentifier: (any FilePresenter, [@Sendable () -> Void])] = [:]
        for entry in related {
            let presenter = entry.registered.presenter
            let id = entry.registered.id
            let list = afterMessages(for: entry, moves: moves, outcome: &outcome)
            if !list.isEmpty { messages[id] = (presenter, list) }
        }
        if let own = coordinator.filePresenter, let path = FilePresenterRegistry.canonicalPath(of: own) {
            let id = ObjectIdentifier(own)
            if let move = moves.first(where: { $0.from == path || CoordinationPath.isAncestor($0.from, of: path) }) {
                outcome.moves.append((id, CoordinationPath.rebase(path, from: move.from, to: move.to)))
            } else if !writeKeys.isEmpty {
                outcome.moves.append((id, path))
            }
        }
        if !writeKeys.isEmpty {
            FilePresenterRegistry.shared.endWrite(writeKeys, outcome: outcome)
        } else if !outcome.moves.isEmpty {
            FilePresenterRegistry.shared.endWrite([], outcome: outcome)
        }
        handshake.reacquire(after: messages)
        releaseLocks()
    }

    private func afterMessages(
        for entry: Related,
        moves: [(from: String, to: String)],
        outcome: inout FilePresenterRegistry.WriteOutcome
    ) -> [@Sendable () -> Void] {
        let presenter = entry.registered.presenter
        let id = entry.registered.id
        let path = entry.registered.path
        if let move = moves.first(where: { $0.from == path || CoordinationPath.isAncestor($0.from, of: path) }) {
            let newPath = CoordinationPath.rebase(path, from: move.from, to: move.to)
            outcome.moves.append((id, newPath))
            let url = URL(fileURLWithPath: newPath)
            return [{ presenter.presentedItemDidMove(to: url) }]
        }
        var list: [@Sendable () -> Void] = []
        for move in moves where CoordinationPath.isAncestor(path, of: move.from) {
            let from = URL(fileURLWithPath: move.from)
            let to = URL(fileURLWithPath: move.to)
            list.append { presenter.presentedSubitem(at: from, didMoveTo: to) }
            outcome.subitems += [(id, move.from), (id, move.to)]
        }
        var changed = false
        for (index, relation) in entry.relations where items[index].isWrite {
            let item = items[index]
            if moves.contains(where: { $0.from == item.key || $0.to == item.key }) { continue }
            let deleting = item.writing.contains(.forDeleting)
            switch relation {
            case .item:
                outcome.refreshed.insert(id)
                if !deleting && !changed {
                    changed = true
                    list.append { presenter.presentedItemDidChange() }
                }
            case .descendant:
                outcome.refreshed.insert(id)
            case .ancestor:
                outcome.subitems.append((id, item.key))
                guard !deleting, FileManager.default.fileExists(atPath: item.key) else { continue }
                let url = URL(fileURLWithPath: item.key)
                if existedBefore[index] {
                    list.append { presenter.presentedSubitemDidChange(at: url) }
                } else {
                    list.append { presenter.presentedSubitemDidAppear(at: url) }
                }
            }
        }
        return list
    }

    private func releaseLocks() {
        for (key, fd) in held.reversed() {
            if let fd { CoordinationLockFile.release(fd) }
            CoordinationLockTable.shared.release(key: key, thread: thread)
        }
        held = []
    }
}
