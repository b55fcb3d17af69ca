import Foundation
import UbiquityProtocol

/// What apps ask of one item — download it, evict it, bring it to the service's state after a change of its
/// versions — goes through the planner like a round's work: the request is an input, the item's lane is held, and the
/// planner's operations run until the item is where the request wants it.
extension ContainerSync {
    /// Downloads the current content of the item at `path` (a placeholder, or an out-of-date copy), asking the
    /// service for its current version first.
    /// - Throws: ``ProtocolError/Code/itemNotFound`` for an unknown path; ``ProtocolError/Code/notUploaded`` when the
    ///   local copy has changes the service does not have yet (they go up first, with the next round); download
    ///   errors (also recorded on the item).
    public func download(_ path: ItemPath) async throws {
        let id = try known(path).id
        try await inLane(id) {
            try observe(try await detail(of: id))
            guard var item = try state.record(id), item.observation.remote?.isDeleted == false else {
                throw ProtocolError(.itemNotFound, "no item at \(path) in container \(container)")
            }
            if item.observation.local == nil, item.observation.synced?.identity == nil {
                item.observation.requests.insert(.download)
                try await store(item)
            }
            try await drive(id) { operation in
                if case .uploadContent = operation {
                    throw ProtocolError(
                        .notUploaded,
                        "\(path) has changes that are not on the service yet; they go up with the next sync")
                }
            }
        }
    }

    /// Drops the local content of the item at `path`, leaving a placeholder (downloaded again on demand, not by the
    /// eager policy).
    ///
    /// - Throws: ``ProtocolError/Code/itemNotFound`` for an unknown path; ``ProtocolError/Code/malformedRequest``
    ///   for a folder; ``ProtocolError/Code/notUploaded`` when the local copy has changes the service does not have
    ///   yet (evicting would lose them) — nothing changes then.
    public func evict(_ path: ItemPath) async throws {
        let id = try known(path).id
        try await inLane(id) {
            guard let item = try state.record(id) else {
                throw ProtocolError(.itemNotFound, "no item at \(path) in container \(container)")
            }
            guard item.item.kind != .directory else { throw ProtocolError(.malformedRequest, "\(path) is a folder") }
            guard let local = item.observation.local else { return }  // a placeholder already
            let notUploaded = ProtocolError(
                .notUploaded, "\(path) has changes that are not on the service yet; sync before evicting")
            guard let synced = item.observation.synced, synced.version != nil else { throw notUploaded }
            switch SyncPlanner.contentState(local, synced) {
            case .same, .unknown: break  // the removal checks the content itself when the identity cannot tell
            case .changed, .absent: throw notUploaded
            }
            switch try await perform(.evict(id, path: local.path, expecting: local.identity), on: item) {
            case .done: return
            case .stale, .refused, .pathTaken: throw notUploaded
            }
        }
    }

    /// Brings item `id` to the service's current state: asks the service for it, then runs the planner's operations
    /// on it (a download over an unchanged copy, a move) — after an app changed its versions, say.
    func refresh(_ id: ItemID) async throws {
        try await inLane(id) {
            try observe(try await detail(of: id))
            try await drive(id) { _ in }
        }
    }

    /// Runs the planner's operations on item `id` (in its lane) until it is in step, or an operation is refused or
    /// finds the world moved on twice; `check` may refuse an operation first (by throwing). An operation's own
    /// failure is thrown.
    private func drive(_ id: ItemID, check: (SyncOperation) throws -> Void) async throws {
        var stale = 0
        for _ in 0..<Self.operationsPerItem {
            guard let item = try state.record(id) else { return }
            let context = try context(for: item.observation)
            guard
                let operation = SyncPlanner.decide(
                    item.observation, context: context, configuration: planner.configuration)
            else { return }
            try check(operation)
            do {
                try await execute(operation, on: item)
            } catch is LocalCopyChanged {
                try observeLocalCopy(of: id)
                stale += 1
                if stale > 1 { return }
            } catch is ContentChangedWhileRead {
                stale += 1
                if stale > 1 { return }
            } catch let error as ProtocolError where error.code != .internalError {
                if case .download = operation, var refused = try state.record(id) {
                    refused.downloadError = ItemError(error)
                    try await commit([RecordWrite(refused, inStep: false)])
                }
                throw error
            }
        }
    }

    /// The item at `path`.
    /// - Throws: ``ProtocolError/Code/itemNotFound`` for a path the engine does not know.
    func known(_ path: ItemPath) throws -> LocalItem {
        guard let item = try state.item(at: path) else {
            throw ProtocolError(.itemNotFound, "no item at \(path) in container \(container)")
        }
        return item
    }
}
