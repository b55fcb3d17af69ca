import Foundation
import UbiquityProtocol

/// The versions of one item and the rules that move them: the pure state machine behind commits, deletes and
/// conflict resolution. Each operation changes the state and returns the feed changes it makes; storage drivers
/// persist the state and the changes in one transaction, and nothing here touches a disk or a socket.
///
/// The rules:
/// - A version based on the current version becomes current.
/// - A version based on anything else (a stale base, or no base for an item that has versions) is a conflict: both
///   it and the current version are kept, and ``VersionRecord/winner(among:)`` — latest modification date, ties to
///   the greater version id — decides which is current; the other is marked a conflict version. Nothing is dropped.
/// - A version whose content hash equals that of the current version or of an unresolved conflict version is not
///   a new version at all (identical content is never a conflict).
/// - A commit to a deleted item brings it back: an edit wins over a deletion.
/// - A delete based on a version that is not current is refused with ``ProtocolError/Code/staleDelete``.
public struct ItemVersions: Hashable, Sendable {
    /// What a commit did.
    public enum CommitOutcome: Hashable, Sendable {
        /// The version is now the current one.
        case becameCurrent(VersionID)
        /// The version was kept as a conflict version; `current` stays current.
        case keptAsConflict(VersionID, current: VersionID)
        /// The same content is already there as `existing`; nothing was added.
        case identical(existing: VersionID)
    }

    /// The item.
    public let itemID: ItemID
    /// The current version; `nil` before the first commit.
    public private(set) var current: VersionID?
    /// Every kept version, current and conflict ones and history.
    public private(set) var versions: [VersionID: VersionRecord]
    /// Whether the item is a tombstone.
    public private(set) var isDeleted: Bool

    /// A new item with no versions.
    public init(itemID: ItemID) {
        self.itemID = itemID
        current = nil
        versions = [:]
        isDeleted = false
    }

    /// The state as stored: `versions` of `itemID`, `current` among them.
    public init(itemID: ItemID, versions: [VersionRecord], current: VersionID?, isDeleted: Bool) {
        self.itemID = itemID
        self.versions = Dictionary(versions.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.current = current
        self.isDeleted = isDeleted
    }

    /// The conflict versions not yet marked resolved, winners first.
    public var unresolvedConflicts: [VersionRecord] {
        versions.values.filter { $0.isConflict && !$0.isResolved }.sorted { VersionRecord.precedes($1, $0) }
    }

    /// Commits `version`; returns what happened and the feed changes it makes.
    public mutating func commit(_ version: VersionRecord) -> (outcome: CommitOutcome, changes: [Change]) {
        precondition(version.itemID == itemID, "a version of another item")
        if let same = existingVersion(withContent: version.contentHash) {
            return (.identical(existing: same), [])
        }
        var added = version
        added.isConflict = false
        added.isResolved = false
        guard !isDeleted, let currentID = current, let currentVersion = versions[currentID] else {
            // The first version, or an edit that brings a deleted item back.
            isDeleted = false
            versions[added.id] = added
            current = added.id
            return (.becameCurrent(added.id), changes(adding: added.id, current: added.id))
        }
        if added.basedOn == currentID {
            versions[added.id] = added
            current = added.id
            return (.becameCurrent(added.id), changes(adding: added.id, current: added.id))
        }
        // A conflict: both are kept, the rule picks the current one, the other is a conflict version.
        let winner = VersionRecord.winner(among: [currentVersion, added])!
        if winner.id == added.id {
            var loser = currentVersion
            loser.isConflict = true
            versions[loser.id] = loser
            versions[added.id] = added
            current = added.id
            return (.becameCurrent(added.id), changes(adding: added.id, current: added.id))
        }
        added.isConflict = true
        versions[added.id] = added
        return (.keptAsConflict(added.id, current: currentID), [.versionAdded(itemID: itemID, versionID: added.id)])
    }

    /// Deletes the item, if `basedOn` is its current version.
    ///
    /// - Throws: ``ProtocolError/Code/staleDelete`` (naming the current version) when it is not; nothing changes.
    public mutating func delete(basedOn: VersionID?) throws(ProtocolError) -> [Change] {
        if isDeleted { return [] }
        guard basedOn == current else {
            throw ProtocolError(
                .staleDelete,
                "the delete was based on \(basedOn?.description ?? "no version"); the current version is "
                    + "\(current?.description ?? "none")", currentVersion: current)
        }
        isDeleted = true
        return [.itemDeleted(itemID: itemID)]
    }

    /// Marks the conflict version `id` resolved.
    ///
    /// - Throws: ``ProtocolError/Code/unknownVersion`` or ``ProtocolError/Code/notAConflict``; nothing changes.
    public mutating func markResolved(_ id: VersionID) throws(ProtocolError) -> [Change] {
        guard var version = versions[id] else { throw unknown(id) }
        guard version.isConflict else { throw ProtocolError(.notAConflict, "\(id) is not a conflict version") }
        if version.isResolved { return [] }
        version.isResolved = true
        versions[id] = version
        return [.versionResolved(itemID: itemID, versionID: id)]
    }

    /// Removes the version `id` (a conflict version or an old one).
    ///
    /// - Throws: ``ProtocolError/Code/unknownVersion`` or ``ProtocolError/Code/cannotRemoveCurrent``; nothing
    ///   changes.
    public mutating func remove(_ id: VersionID) throws(ProtocolError) -> [Change] {
        guard versions[id] != nil else { throw unknown(id) }
        guard id != current else {
            throw ProtocolError(.cannotRemoveCurrent, "\(id) is the current version; replace it first")
        }
        versions[id] = nil
        return [.versionRemoved(itemID: itemID, versionID: id)]
    }

    /// Makes the version `id` current — the resolution "replace with this version". A conflict version made
    /// current stops being a conflict version (it is resolved by winning).
    ///
    /// - Throws: ``ProtocolError/Code/unknownVersion`` or ``ProtocolError/Code/itemDeleted``; nothing changes.
    public mutating func replace(with id: VersionID) throws(ProtocolError) -> [Change] {
        guard var version = versions[id] else { throw unknown(id) }
        guard !isDeleted else { throw ProtocolError(.itemDeleted, "\(itemID) is deleted") }
        if id == current { return [] }
        var changes: [Change] = []
        if version.isConflict && !version.isResolved {
            changes.append(.versionResolved(itemID: itemID, versionID: id))
        }
        version.isConflict = false
        version.isResolved = false
        versions[id] = version
        current = id
        changes.append(.itemChanged(itemID: itemID, currentVersion: id))
        return changes
    }

    private func existingVersion(withContent hash: ChunkHash) -> VersionID? {
        if !isDeleted, let current, versions[current]?.contentHash == hash { return current }
        return unresolvedConflicts.first { $0.contentHash == hash }?.id
    }

    private func changes(adding id: VersionID, current: VersionID) -> [Change] {
        [.versionAdded(itemID: itemID, versionID: id), .itemChanged(itemID: itemID, currentVersion: current)]
    }

    private func unknown(_ id: VersionID) -> ProtocolError {
        ProtocolError(.unknownVersion, "\(id) is not a version of item \(itemID)")
    }
}

extension ItemVersions {
    /// The history versions: neither current nor unresolved conflict versions, newest first.
    public var history: [VersionRecord] {
        versions.values.filter { $0.id != current && !($0.isConflict && !$0.isResolved) }
            .sorted { VersionRecord.precedes($1, $0) }
    }

    /// Removes the history versions `retention` no longer keeps: beyond its count, or older than its age at `now`.
    /// Returns the feed changes (one removed version each).
    public mutating func prune(_ retention: VersionRetention, now: Date) -> [Change] {
        var changes: [Change] = []
        for (index, version) in history.enumerated() {
            let tooOld = retention.maximumAge.map { now.timeIntervalSince(version.modificationDate) > $0 } ?? false
            guard index >= retention.maximumCount || tooOld else { continue }
            versions[version.id] = nil
            changes.append(.versionRemoved(itemID: itemID, versionID: version.id))
        }
        return changes
    }
}
