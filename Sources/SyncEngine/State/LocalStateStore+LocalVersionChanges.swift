import Foundation
import GRDB
import UbiquityProtocol

/// An item's versions as this device knows them: the engine's record of the item, its other versions as last heard
/// (with the changes made here applied), and the versions a replace made here turned out of current before the
/// service sent their records.
public struct LocalVersionState: Hashable, Sendable {
    /// The item.
    public var item: LocalItem
    /// The versions other than the current one (conflict and history), newest first.
    public var others: [VersionRecord]
    /// Versions a replace made on this device made non-current, whose records have not come from the service yet:
    /// they are other versions too, known by id only (so that removing the other versions right after a replace
    /// removes them as well).
    public var replaced: [VersionID]
}

extension LocalStateStore {
    /// The key under which the versions a local replace made non-current are kept, per item.
    static func replacedKey(of id: ItemID) -> String { "versions.replaced.\(id.string)" }

    /// The versions of the item at `path` as this device knows them — as last heard from the service, with the
    /// changes made here that the service has not acknowledged yet applied over them; `nil` when the engine knows no
    /// item there.
    public func versionState(ofItemAt path: ItemPath) throws -> LocalVersionState? {
        try pool.read { db in try Self.versionState(ofItemAt: path, in: db) }
    }

    /// Changes the versions of the item at `path` on this device at once and queues the same operations for the
    /// service, in one transaction: what `FileVersion`'s `replaceItem`, `isResolved` and `remove` do while the
    /// engine runs in this process or another. The engine sends the queue, in order, at the start of its next round;
    /// when it next hears the item from the service, it finds its records already as the service has them and
    /// announces nothing again — unless a round already reading the item when the change was made writes back the
    /// records from before it (reads here still show the change while it is queued; see ``versionState(ofItemAt:)``).
    ///
    /// Locally: ``VersionOperation/replaceCurrent(_:)`` makes the version the item's current one (its record leaves
    /// the other versions; the version it replaced is kept in ``LocalVersionState/replaced``),
    /// ``VersionOperation/markResolved(_:)`` marks a conflict version resolved, ``VersionOperation/remove(_:)`` drops
    /// a version. The item's `hasUnresolvedConflicts` follows. The item's content is the caller's to put in place.
    /// - Parameters:
    ///   - path: The item.
    ///   - decide: Given the versions as they are inside the transaction, the operations to apply (none: nothing
    ///     changes).
    /// - Returns: The versions before and after.
    /// - Throws: ``ProtocolError/Code/itemNotFound`` for a path the engine does not know;
    ///   ``ProtocolError/Code/unknownVersion`` for an operation on a version that is not one of the other versions
    ///   (for ``VersionOperation/markResolved(_:)``: not a conflict version). Nothing changes then.
    @discardableResult
    func changeVersionsLocally(
        ofItemAt path: ItemPath, _ decide: (LocalVersionState) throws -> [VersionOperation]
    ) throws -> (before: LocalVersionState, after: LocalVersionState) {
        try writingRecords { db, touched in
            guard let before = try Self.versionState(ofItemAt: path, in: db) else {
                throw ProtocolError(.itemNotFound, "no item at \(path)")
            }
            touched.insert(before.item.id)
            let operations = try decide(before)
            var after = before
            var queued: [VersionOperation] = []
            for operation in operations where try Self.apply(operation, to: &after, at: path) {
                queued.append(operation)
            }
            guard !queued.isEmpty else { return (before, after) }
            after.item.hasUnresolvedConflicts = after.others.contains { $0.isConflict && !$0.isResolved }
            try Self.store(after, in: db)
            for operation in queued {
                try db.execute(
                    sql: "INSERT INTO outbox (item_id, operation) VALUES (?, ?)",
                    arguments: [
                        after.item.id.string, String(decoding: try WireJSONEncoder().encode(operation), as: UTF8.self),
                    ])
            }
            return (before, after)
        }
    }

    /// Applies one operation to `state`; returns whether it changes anything (and is to be sent).
    static func apply(_ operation: VersionOperation, to state: inout LocalVersionState, at path: ItemPath)
        throws -> Bool
    {
        switch operation {
        case .replaceCurrent(let id):
            guard let index = state.others.firstIndex(where: { $0.id == id }) else {
                throw ProtocolError(.unknownVersion, "\(id) is not one of the other versions of \(path)")
            }
            state.others.remove(at: index)
            if let current = state.item.serverVersion, current != id, !state.replaced.contains(current) {
                state.replaced.append(current)
            }
            state.replaced.removeAll { $0 == id }
            state.item.serverVersion = id
        case .markResolved(let id):
            guard let index = state.others.firstIndex(where: { $0.id == id }), state.others[index].isConflict else {
                throw ProtocolError(.unknownVersion, "\(id) is not a conflict version of \(path)")
            }
            if state.others[index].isResolved { return false }
            state.others[index].isResolved = true
        case .remove(let id):
            if let index = state.others.firstIndex(where: { $0.id == id }) {
                state.others.remove(at: index)
                state.replaced.removeAll { $0 == id }
            } else if let index = state.replaced.firstIndex(of: id) {
                state.replaced.remove(at: index)
            } else {
                throw ProtocolError(.unknownVersion, "\(id) is not one of the other versions of \(path)")
            }
        }
        return true
    }

    private static func versionState(ofItemAt path: ItemPath, in db: Database) throws -> LocalVersionState? {
        // The item whose local copy is at the path, else any the path is of.
        let rows = try Row.fetchAll(
            db, sql: "SELECT record, observation FROM item_record WHERE path = ?", arguments: [path.string])
        let chosen =
            try rows.first { try ItemObservation(stateBytes: $0["observation"] as Data).local != nil } ?? rows.first
        guard let bytes = chosen?["record"] as Data? else { return nil }
        var state = try recordedVersionState(of: LocalItem(stateBytes: bytes), in: db)
        // A change made here stands until the service has it, even over records the engine wrote meanwhile from an
        // answer the service gave before the change (an operation that no longer applies is passed over).
        for text in try String.fetchAll(
            db, sql: "SELECT operation FROM outbox WHERE item_id = ? ORDER BY sequence",
            arguments: [state.item.id.string])
        {
            guard let operation = try? JSONDecoder().decode(VersionOperation.self, from: Data(text.utf8)) else {
                continue
            }
            _ = try? apply(operation, to: &state, at: path)
        }
        state.item.hasUnresolvedConflicts = state.others.contains { $0.isConflict && !$0.isResolved }
        return state
    }

    /// The item's versions as recorded, without the queued changes over them.
    static func recordedVersionState(of id: ItemID, in db: Database) throws -> LocalVersionState? {
        guard
            let bytes = try Data.fetchOne(
                db, sql: "SELECT record FROM item_record WHERE id = ?", arguments: [id.string])
        else { return nil }
        return try recordedVersionState(of: LocalItem(stateBytes: bytes), in: db)
    }

    private static func recordedVersionState(of item: LocalItem, in db: Database) throws -> LocalVersionState {
        let others = try String.fetchAll(
            db, sql: "SELECT record FROM version WHERE item_id = ?", arguments: [item.id.string]
        )
        .map { try WireJSONDecoder().decode(VersionRecord.self, from: $0) }
        .sorted { $0.modificationDate > $1.modificationDate }
        let known = Set(others.map(\.id))
        let replaced =
            try String.fetchOne(
                db, sql: "SELECT value FROM value WHERE key = ?", arguments: [replacedKey(of: item.id)]
            )
            .map { try JSONDecoder().decode([VersionID].self, from: Data($0.utf8)) } ?? []
        // Once the service's record of a replaced version has come (or it became current again), it is no longer
        // known by id only.
        return LocalVersionState(
            item: item, others: others,
            replaced: replaced.filter { !known.contains($0) && $0 != item.serverVersion })
    }

    static func store(_ state: LocalVersionState, in db: Database) throws {
        let id = state.item.id.string
        // The service's record as this device now expects it: a version made current here is the current one (its
        // content hash and size from its record), so the planner brings the local copy to it.
        if var observation = try Data.fetchOne(
            db, sql: "SELECT observation FROM item_record WHERE id = ?", arguments: [id]
        ).map({ try ItemObservation(stateBytes: $0) }),
            let version = state.item.serverVersion, observation.remote?.version != version
        {
            let made = try String.fetchOne(
                db, sql: "SELECT record FROM version WHERE item_id = ? AND version_id = ?",
                arguments: [id, version.string]
            ).map { try WireJSONDecoder().decode(VersionRecord.self, from: $0) }
            if var remote = observation.remote {
                remote.version = version
                remote.contentHash = made?.contentHash
                remote.size = made?.size ?? remote.size
                observation.remote = remote
            }
            if let made {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO value (key, value) VALUES (?, ?)",
                    arguments: [currentVersionKey(of: state.item.id), try encode(made)])
            }
            try db.execute(
                sql: "UPDATE item_record SET observation = ?, in_step = 0 WHERE id = ?",
                arguments: [observation.stateBytes, id])
        }
        try db.execute(
            sql: "UPDATE item_record SET record = ? WHERE id = ?", arguments: [state.item.stateBytes, id])
        try db.execute(sql: "DELETE FROM version WHERE item_id = ?", arguments: [id])
        for version in state.others {
            try db.execute(
                sql: "INSERT INTO version (item_id, version_id, record) VALUES (?, ?, ?)",
                arguments: [
                    id, version.id.string, String(decoding: try WireJSONEncoder().encode(version), as: UTF8.self),
                ])
        }
        if state.replaced.isEmpty {
            try db.execute(sql: "DELETE FROM value WHERE key = ?", arguments: [replacedKey(of: state.item.id)])
        } else {
            try db.execute(
                sql: "INSERT OR REPLACE INTO value (key, value) VALUES (?, ?)",
                arguments: [
                    replacedKey(of: state.item.id),
                    String(decoding: try WireJSONEncoder().encode(state.replaced), as: UTF8.self),
                ])
        }
    }
}

extension LocalStateStore {
    /// `versions` (an item's other versions as the service just sent them) with the changes made on this device and
    /// not yet sent applied over them — what reads of the item's versions will show once they are recorded.
    func applyingQueuedOperations(to versions: [VersionRecord], of item: LocalItem) throws -> [VersionRecord] {
        try pool.read { db in
            var state = LocalVersionState(item: item, others: versions, replaced: [])
            for text in try String.fetchAll(
                db.cachedStatement(sql: "SELECT operation FROM outbox WHERE item_id = ? ORDER BY sequence"),
                arguments: [item.id.string])
            {
                guard let operation = try? JSONDecoder().decode(VersionOperation.self, from: Data(text.utf8)) else {
                    continue
                }
                _ = try? Self.apply(operation, to: &state, at: item.path)
            }
            return state.others
        }
    }
}
