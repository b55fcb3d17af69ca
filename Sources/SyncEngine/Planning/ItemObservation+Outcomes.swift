import UbiquityProtocol

/// What completed operations change in an item's observations: the executor calls these once the operation's
/// effect is durable (the service answered, the file is in place), then persists the observation. Pure.
extension ItemObservation {
    /// The local content was read at `readAt` (nanoseconds since 1970): its hash, if the local copy is still the one
    /// `identity` names. The hash stands for what the planner decides now (what replaces or removes the copy checks
    /// the content again inside its coordinated write). A read within ``LocalFileIdentity/racyInterval`` of the
    /// file's modification proves nothing for later (a same-size write in the same tick would not change the
    /// identity): the identity stays racy, so the next scan that sees the file reads it again.
    public mutating func recordHash(_ hash: ChunkHash, of identity: LocalFileIdentity, readAt: Int64) {
        guard local?.identity == identity else { return }
        local?.contentHash = hash
        local?.identity.capturedAt = max(readAt, identity.capturedAt)
    }

    /// The service created the item's record: both sides agree on it, with no content yet (a folder is in step).
    public mutating func recordCreated(_ record: RemoteView) {
        remote = record
        synced = SyncedView(
            path: record.path, kind: record.kind, identity: record.kind == .directory ? local?.identity : nil)
        if record.kind != .directory, record.version == nil { requests.insert(.firstUpload) }
    }

    /// An upload of the local copy `identity` (content `hash`, `size` bytes) was committed as `version`. When it
    /// became current (or was the current content already), both sides agree on it; when the service kept it as a
    /// conflict version, the local copy is safe there and the service's current version (`record`) comes down over
    /// it next.
    public mutating func recordCommitted(
        _ version: VersionID, hash: ChunkHash, size: Int64, identity: LocalFileIdentity, record: RemoteView
    ) {
        remote = record
        requests.remove(.firstUpload)
        let path = synced?.path ?? record.path
        if record.version == version || record.contentHash == hash {
            synced = SyncedView(
                path: path, kind: record.kind, version: record.version, contentHash: hash, size: size,
                identity: identity)
        } else {
            // The local content was based on the synced version — or, written where only a placeholder was, on none:
            // either way the service's current version comes down over it next.
            let base = synced?.identity == nil ? nil : synced?.version
            synced = SyncedView(
                path: path, kind: record.kind, version: base, contentHash: hash, size: size, identity: identity)
        }
        requests.remove(.keepEvicted)
    }

    /// Both sides have the item at `path`.
    public mutating func recordAgreedPath(_ path: ItemPath) {
        synced?.path = path
    }

    /// The service moved the record.
    public mutating func recordMovedRemote(_ record: RemoteView) {
        remote = record
        synced?.path = record.path
    }

    /// A delete was refused as stale: the service has a newer version (`record`), which wins; the item is a
    /// placeholder here until it comes down.
    public mutating func recordStaleDelete(_ record: RemoteView) {
        remote = record
        synced?.identity = nil
    }

    /// Both sides agree on `record` without its content here.
    public mutating func recordPlaceholder(_ record: RemoteView) {
        remote = record
        synced = SyncedView(
            path: record.path, kind: record.kind, version: record.version, contentHash: record.contentHash,
            size: record.size)
    }

    /// `version` (as `record` describes it) was put in place at `record.path`; `identity` is the placed copy's.
    public mutating func recordPlaced(_ record: RemoteView, identity: LocalFileIdentity) {
        remote = record
        synced = SyncedView(
            path: record.path, kind: record.kind, version: record.version, contentHash: record.contentHash,
            size: record.size, identity: identity)
        local = LocalView(path: record.path, kind: record.kind, identity: identity, contentHash: record.contentHash)
        requests.remove(.download)
        requests.remove(.keepEvicted)
    }

    /// Both sides hold the same content: agree on `record` with the local copy `identity`.
    public mutating func recordAdopted(_ record: RemoteView, identity: LocalFileIdentity) {
        remote = record
        synced = SyncedView(
            path: record.path, kind: record.kind, version: record.version, contentHash: record.contentHash,
            size: record.size, identity: identity)
    }

    /// The local copy is the item's earlier version `version` (its content `contentHash`, the copy `identity`): that
    /// version is what both sides agree on, the service's record as it is.
    public mutating func recordAdoptedEarlier(
        _ version: VersionID, contentHash: ChunkHash, identity: LocalFileIdentity
    ) {
        guard let remote else { return }
        synced = SyncedView(
            path: remote.path, kind: remote.kind, version: version, contentHash: contentHash, size: identity.size,
            identity: identity)
    }

    /// The local copy moved to `path` (now `identity`).
    public mutating func recordMovedLocal(to path: ItemPath, identity: LocalFileIdentity) {
        local?.path = path
        // The file moved is the one planned for, but it may have been written since it was last read: then its
        // hash is not known any more (nor when it was read too soon after its last write to tell).
        if let before = local?.identity, before.isRacy || !identity.isUnchanged(since: before) {
            local?.contentHash = nil
        }
        local?.identity = identity
        synced?.path = path
        if let recorded = synced?.identity, recorded.isSameFile(as: identity) {
            synced?.identity?.changed = identity.changed  // a rename changes only the status-change time
        }
    }

    /// The local copy was removed, or evicted: a placeholder remains when the item lives on.
    public mutating func recordLocalRemoved(evicted: Bool) {
        local = nil
        synced?.identity = nil
        requests.remove(.evict)
        if evicted { requests.insert(.keepEvicted) }
    }
}

extension ItemObservation {
    /// The local file stepped aside to `path` (renamed to a conflicted copy, now `identity`). An item the two sides
    /// never agreed on, or one deleted on the service, lets it go (the next scan finds it as an item of its own); a
    /// synced item keeps it there. The file moved is the one planned for, but it may have been written since it was
    /// last read (or read too soon after its last write to tell): then its hash is not known any more (kept, it would
    /// pass the save for the content read before).
    public mutating func recordMovedAside(to path: ItemPath, identity: LocalFileIdentity) {
        guard synced != nil, remote?.isDeleted != true else { return recordDetached() }
        local?.path = path
        if let before = local?.identity, before.isRacy || !identity.isUnchanged(since: before) {
            local?.contentHash = nil
        }
        local?.identity = identity
    }
}

extension ItemObservation {
    /// The local copy is no longer this item's: the next scan finds it as an item of its own (an edit of an item
    /// deleted on the service whose path another item took, say). The item keeps only its service record.
    public mutating func recordDetached() {
        local = nil
        synced = nil
    }
}
