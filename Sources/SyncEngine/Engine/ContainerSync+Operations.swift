import DocumentKit
import Foundation
import UbiquityProtocol

/// What each of the planner's operations does, and the outcome it records. Called in the item's lane; every change to
/// a local file is a coordinated write that checks, inside the coordination, that the file is still what the
/// operation expects (``checkLocalCopy``), and throws ``LocalCopyChanged`` when it is not.
extension ContainerSync {
    func execute(_ operation: SyncOperation, on item: StoredItem) async throws {
        var item = item
        switch operation {
        case .hashLocal(_, let expecting):
            guard let local = item.observation.local else { throw LocalCopyChanged() }
            let read = try await readContent(at: local.path, kind: local.kind)
            noteRead(read, into: &item)
            guard read.identity.isUnchanged(since: expecting) else { throw LocalCopyChanged() }
            try await store(item)

        case .createRemote(let id, let path, let kind):
            if kind != .directory, !item.observation.requests.contains(.firstUpload) {
                // Remembered before it is sent: if the answer is lost and the local copy goes, the record goes too.
                item.observation.requests.insert(.firstUpload)
                try await store(item)
            }
            if kind == .file, let local = item.observation.local, local.path == path,
                local.identity.size <= Self.smallUploadBytes
            {
                try await createWithContent(&item, at: path)
                return
            }
            let record: RemoteView
            do {
                let answer = try await itemRequests.createItem(CreateItemRequest(id: id, path: path, kind: kind))
                record = Self.view(of: answer.item, content: nil)
            } catch let error as ProtocolError where error.code == .itemExists {
                // Created by a request whose answer was lost, and moved here since: the record is the service's,
                // and the move goes up next.
                record = Self.view(of: try await detail(of: id))
            }
            item.observation.recordCreated(record)
            item.uploadError = nil
            try await store(item)

        case .uploadContent(_, let basedOn, _):
            try await upload(&item, basedOn: basedOn)

        case .moveRemote(let id, let path):
            let answer = try await service.moveItem(id, to: path, in: container)
            item.observation.recordMovedRemote(Self.view(of: answer.item, content: item.observation.remote))
            item.uploadError = nil
            try await store(item)

        case .deleteRemote(let id, let basedOn):
            // What the plan took for a deletion here must still be one: nothing at the path now.
            if let path = item.observation.synced?.path, disk.exists(layout.url(of: path)) {
                throw LocalCopyChanged()
            }
            // And nothing there is a deletion only in the container's own folder, not in an empty one in its place.
            try checkFolder()
            do {
                _ = try await service.deleteItem(id, basedOn: basedOn, in: container)
                try await commit([RecordWrite(removing: id)])
            } catch let error as ProtocolError where error.code == .itemNotFound && basedOn == nil {
                try await commit([RecordWrite(removing: id)])  // a creation that never reached the service
            } catch let error as ProtocolError where error.code == .staleDelete {
                // Edited elsewhere meanwhile: the edit wins; the item comes back with the service's version.
                let detail = try await detail(of: id)
                item.observation.recordStaleDelete(Self.view(of: detail))
                try await store(item)
                try observe(detail)
            }

        case .agreePath(_, let path):
            item.observation.recordAgreedPath(path)
            try await store(item)

        case .recordPlaceholder(_, let view):
            item.observation.recordPlaceholder(view)
            try await store(item)

        case .download(let id, let version, let path, let replacing):
            let record = try await versionRecord(version, of: id)
            try await place(record, of: &item, at: path, replacing: replacing)

        case .makeFolder(_, let path):
            let url = layout.url(of: path)
            if let found = disk.identity(at: url), !found.isDirectory {
                throw LocalCopyChanged()  // a file of its own is there: it steps aside first
            }
            try disk.createDirectory(at: url)
            guard let remote = item.observation.remote else { throw LocalCopyChanged() }
            item.observation.recordPlaced(remote, identity: try scanner.identity(of: url, kind: .directory))
            try await store(item)

        case .adoptEarlier(_, let version, let contentHash, let identity):
            item.observation.recordAdoptedEarlier(version, contentHash: contentHash, identity: identity)
            try await store(item)

        case .adoptLocal(let id, let view, let identity):
            item.observation.recordAdopted(view, identity: identity)
            var locations: [(ChunkHash, LocalChunkLocation)]?
            if let version = view.version, let record = try state.currentVersionRecord(of: id), record.id == version {
                locations = chunkLocations(of: record.manifest, for: item.item)
            }
            try await store(item, chunkLocations: locations)

        case .moveLocal(_, let from, let to, let expecting):
            let identity = try await moveLocal(from: from, to: to, kind: item.item.kind, expecting: expecting)
            item.observation.recordMovedLocal(to: to, identity: identity)
            try await store(item)

        case .deleteLocal(let id, let path, let expecting):
            try await removeLocal(at: path, of: item, expecting: expecting)
            try await commit([RecordWrite(removing: id)])

        case .evict(_, let path, let expecting):
            try await removeLocal(at: path, of: item, expecting: expecting)
            item.observation.recordLocalRemoved(evicted: true)
            try await store(item, chunkLocations: [])

        case .moveAside(_, let path, let expecting):
            let (target, identity) = try await moveAside(path, kind: item.item.kind, expecting: expecting)
            item.observation.recordMovedAside(to: target, identity: identity)
            if item.observation.local == nil, item.observation.remote == nil, item.observation.synced == nil {
                try await commit([RecordWrite(removing: item.id)])  // let go: the next scan finds the file as new
            } else {
                try await store(item)
            }

        case .detachLocal:
            item.observation.recordDetached()
            try await store(item)

        case .forget(let id):
            try await commit([RecordWrite(removing: id)])
        }
    }

    /// The remote view of the service's record; the content fields from `content` (the same version's), or none.
    static func view(of record: ItemRecord, content: RemoteView?) -> RemoteView {
        let same = content?.version == record.currentVersion
        return RemoteView(
            path: record.path, kind: record.kind, version: record.currentVersion,
            contentHash: same ? content?.contentHash : nil, size: same ? content?.size ?? 0 : 0,
            isDeleted: record.isDeleted)
    }

    /// The remote view of an item's detail.
    static func view(of detail: ItemDetail) -> RemoteView {
        let current = detail.versions.first { $0.id == detail.item.currentVersion }
        return RemoteView(
            path: detail.item.path, kind: detail.item.kind, version: detail.item.currentVersion,
            contentHash: current?.contentHash, size: current?.size ?? 0, isDeleted: detail.item.isDeleted)
    }

    /// What a read of the local copy tells: its identity, and its hash when the read proves it (see
    /// ``ItemObservation/recordHash(_:of:readAt:)``).
    private func noteRead(_ read: ContentRead, into item: inout StoredItem) {
        guard let local = item.observation.local else { return }
        if !read.identity.isUnchanged(since: local.identity) || local.identity != read.identity {
            item.observation.local = LocalView(path: local.path, kind: local.kind, identity: read.identity)
        }
        item.observation.recordHash(read.content.contentHash, of: read.identity, readAt: read.readAt)
    }

    /// Uploads the local copy as a new version based on `basedOn`: the chunks the service lacks, then the version
    /// (together, when they are few bytes).
    /// Content that is the service's current content already is adopted instead.
    private func upload(_ item: inout StoredItem, basedOn: VersionID?) async throws {
        guard let local = item.observation.local else { throw LocalCopyChanged() }
        // A large file's first version goes up while it is cut, named from the start (its draft names it); other
        // content once read.
        let pipelined =
            basedOn == nil && local.kind == .file && local.identity.size >= configuration.pipelinedUploadBytes
        let versionID = pipelined ? VersionID(uuid: newIdentifier()) : nil
        let (read, sent) =
            if let versionID {
                try await readUploading(at: local.path, size: local.identity.size, for: item.item, version: versionID)
            } else {
                (try await readContent(at: local.path, kind: local.kind), Set<ChunkHash>())
            }
        noteRead(read, into: &item)
        let (content, identity) = (read.content, read.identity)
        if let remote = item.observation.remote, remote.version != nil, !remote.isDeleted,
            remote.contentHash == content.contentHash
        {
            item.observation.recordAdopted(remote, identity: identity)
            item.uploadError = nil
            try await store(item, chunkLocations: chunkLocations(of: content.manifest, for: item.item))
            return
        }
        let knownCurrent = item.observation.remote?.version
        // The version it is based on, as last heard: the service has its chunks, and its manifest is what the new
        // one's travels as changes to.
        let base = try basedOn.flatMap { id in
            try state.currentVersionRecord(of: item.id).flatMap { $0.id == id ? $0 : nil }
        }
        let version = makeVersion(of: item.id, content, identity, basedOn: basedOn, named: versionID)
        let answer: ItemResponse
        do {
            answer = try await sendWithChunks(of: content, for: item.item, base: base, sent: sent) { chunks in
                try await itemRequests.commit(VersionPayload(version, against: base), bringing: chunks)
            }
        } catch let error as ProtocolError
            where base != nil && (error.code == .unknownVersion || error.code == .chunksMissing)
        {
            // The base is no longer kept (removed since it was heard), and its chunks may have gone with it: they go
            // up again where the service lacks them, and the manifest whole.
            answer = try await sendWithChunks(of: content, for: item.item) { chunks in
                try await itemRequests.commit(VersionPayload(version), bringing: chunks)
            }
        }
        let isCurrent = try await recordCommit(answer, of: version, content: content, identity: identity, on: &item)
        if !isCurrent || basedOn != knownCurrent {
            // Kept as a conflict version (the service's current version comes down over the local copy next), or
            // made current over a version this device never had (which the service keeps as a conflict version):
            // the item's versions are heard at once.
            try observe(try await detail(of: item.id))
        }
    }

    /// Creates the record of a new small file with its first version, in one operation: its content is read, then the
    /// record, the version and its chunks go up in one request (``sendWithChunks(of:for:base:sent:_:)``; many small
    /// files cost the service one commit each, not two, and a few requests for many). The service takes a creation sent again (its answer lost) as a commit to the record it
    /// made: the same content is the version it has, an edit made since is committed over none, as an upload
    /// after a separate creation would be.
    private func createWithContent(_ item: inout StoredItem, at path: ItemPath) async throws {
        let read = try await smallReads.submit(path)
        noteRead(read, into: &item)
        let (content, identity) = (read.content, read.identity)
        let version = makeVersion(of: item.id, content, identity, basedOn: nil)
        let answer: ItemResponse
        do {
            answer = try await sendWithChunks(of: content, for: item.item) { chunks in
                try await itemRequests.createItem(
                    CreateItemRequest(id: item.id, path: path, kind: .file, version: version), bringing: chunks)
            }
        } catch let error as ProtocolError where error.code == .itemExists {
            // Created by a request whose answer was lost, and moved here since: the record is the service's, and
            // the planner takes it from there.
            item.observation.recordCreated(Self.view(of: try await detail(of: item.id)))
            item.uploadError = nil
            try await store(item)
            return
        }
        let isCurrent = try await recordCommit(answer, of: version, content: content, identity: identity, on: &item)
        // Kept as a conflict version: a creation sent again met a version of another content (this device's, or
        // another's made over it); the item's versions are heard at once.
        if !isCurrent { try observe(try await detail(of: item.id)) }
    }

    /// Records the service's `answer` to the commit of `version` (the local copy `identity`, read as `content`) on
    /// `item` and stores it.
    /// - Returns: Whether the content is the service's current content: only when the version it is (this one, or the
    ///   kept version it was found identical to) is the current one. Identical to a kept conflict version, it is safe
    ///   on the service as that version, and the current version comes down over it.
    private func recordCommit(
        _ answer: ItemResponse, of version: VersionRecord, content: LocalContent, identity: LocalFileIdentity,
        on item: inout StoredItem
    ) async throws -> Bool {
        // A commit sent as a delta is answered without the version when it is the one sent.
        let committed = answer.version ?? version
        let isCurrent = answer.item.currentVersion == committed.id
        let view: RemoteView
        if isCurrent {
            view = RemoteView(
                path: answer.item.path, kind: answer.item.kind, version: answer.item.currentVersion,
                contentHash: content.contentHash, size: content.size)
        } else {
            view = Self.view(of: answer.item, content: item.observation.remote)
        }
        item.observation.recordCommitted(
            committed.id, hash: content.contentHash, size: content.size, identity: identity, record: view)
        item.uploadError = nil
        if !isCurrent { item.hasUnresolvedConflicts = true }
        try await store(
            item, chunkLocations: chunkLocations(of: content.manifest, for: item.item),
            currentVersion: isCurrent ? committed : nil)
        return isCurrent
    }

    /// The service's detail of item `id`, its manifests sent as deltas against the current version as last heard
    /// (a small edit of a large file reads in a few operations, not its whole chunk list).
    func detail(of id: ItemID) async throws -> ItemDetail {
        try await service.item(id, have: try state.currentVersionRecord(of: id), in: container)
    }

    /// The record of `version` of item `id`: as last heard, or asked of the service.
    func versionRecord(_ version: VersionID, of id: ItemID) async throws -> VersionRecord {
        if let record = try state.currentVersionRecord(of: id), record.id == version { return record }
        let detail = try await detail(of: id)
        guard let record = detail.versions.first(where: { $0.id == version }) else {
            try observe(detail)
            throw LocalCopyChanged()  // the service moved on: planned again from what it has now
        }
        return record
    }

    /// Assembles `version` in `.ubiquity/tmp/`, checks it against its hashes, and puts it in place at `path` with a
    /// coordinated write that first checks the local copy is still `replacing` (nothing, for a placeholder). The
    /// item's download progress and download error are kept up to date.
    func place(
        _ version: VersionRecord, of item: inout StoredItem, at path: ItemPath, replacing: LocalFileIdentity?
    ) async throws {
        let temporary: URL
        do {
            temporary = try await assembleOnce(version, of: item.item, purpose: "download")
        } catch let error as ProtocolError where error.code != .internalError {
            throw error
        } catch {
            if !(error is CancellationError) {
                item.downloadError = ItemError(error)
                try await store(item)
            }
            throw error
        }
        let destination = layout.url(of: path)
        let kind = item.item.kind
        // A file takes the modification time of the version (when it was saved on its device), as a copy keeps its
        // original's. Set before the identity is taken, it also makes that identity one the next scans trust without
        // reading the file again (not racy) when the version is older than a clock tick; any later write makes the
        // modification time now, which tells it apart.
        let placement = Placement(
            temporary: temporary, destination: destination,
            movedAside: layout.temporary.appendingPathComponent(
                newIdentifier().uuidString.lowercased(), isDirectory: false),
            replacing: replacing, synced: item.observation.synced?.identity,
            syncedHash: item.observation.synced?.contentHash, kind: kind,
            modified: kind == .file ? Self.nanosecondsSince1970(version.modificationDate) : nil)
        let placed: LocalFileIdentity
        do {
            try disk.createDirectory(at: destination.deletingLastPathComponent())
            let done = try await placements.submit(placement)
            if done.movedAside { try? disk.removeItem(at: placement.movedAside) }
            placed = done.identity
        } catch {
            // The assembled copy is this placement's alone: whatever kept it from its place (a save that landed, a
            // full disk, a writer holding the file), it goes, and the next attempt assembles it again.
            try? disk.removeItem(at: temporary)
            if error is LocalCopyChanged {
                logger.notice(
                    "a save landed before a download was put in place; it goes up first", metadata: ["path": "\(path)"])
            }
            throw error
        }
        var view = item.observation.remote ?? RemoteView(path: path, kind: kind)
        view.path = path
        view.version = version.id
        view.contentHash = version.contentHash
        view.size = version.size
        view.isDeleted = false
        item.observation.recordPlaced(view, identity: placed)
        item.downloadError = nil
        try await store(item, chunkLocations: chunkLocations(of: version.manifest, for: item.item))
    }

    /// `date` in nanoseconds since 1970, to the microsecond the service keeps.
    static func nanosecondsSince1970(_ date: Date) -> Int64 {
        (WireTimestamp.microseconds(of: date) + Int64(Date.timeIntervalBetween1970AndReferenceDate) * 1_000_000) * 1_000
    }

    /// Removes the local copy at `path` if it is still `expecting` (and, for a racy identity, the synced content),
    /// checked inside the coordinated delete: a save that lands meanwhile either comes first (and stays) or after
    /// (and writes a new file). A folder is removed only when empty: its items go one by one.
    private func removeLocal(at path: ItemPath, of item: StoredItem, expecting: LocalFileIdentity) async throws {
        let url = layout.url(of: path)
        let (scanner, chunker, kind, disk) = (scanner, configuration.chunker, item.item.kind, disk)
        let (hash, synced) = (item.observation.synced?.contentHash, item.observation.synced?.identity)
        try await onDisk {
            try FileCoordinator().coordinate(writingItemAt: url, options: .forDeleting) { url in
                try disk.coordinationBegins()
                if kind == .directory {
                    guard disk.removeEmptyDirectory(at: url) else { throw LocalCopyChanged() }
                    return
                }
                let check = Self.checkLocalCopy(
                    at: url, recorded: expecting, synced: synced, contentHash: hash, kind: kind, scanner: scanner,
                    chunker: chunker)
                guard check == .unchanged else { throw LocalCopyChanged() }
                try disk.removeItem(at: url)
            }
        }
    }

    /// Moves the local copy from `from` to `to` if it is still the file `expecting` names and nothing is at `to`.
    private func moveLocal(
        from: ItemPath, to: ItemPath, kind: ItemKind, expecting: LocalFileIdentity
    ) async throws -> LocalFileIdentity {
        let (source, target, scanner, disk) = (layout.url(of: from), layout.url(of: to), scanner, disk)
        try disk.createDirectory(at: target.deletingLastPathComponent())
        return try await onDisk {
            try FileCoordinator().coordinate(
                writingItemAt: source, options: .forMoving, writingItemAt: target, options: []
            ) { source, target in
                try disk.coordinationBegins()
                guard let now = try? scanner.identity(of: source, kind: kind), now.isSameFile(as: expecting),
                    !disk.exists(target)
                else { throw LocalCopyChanged() }
                try disk.moveItem(at: source, to: target)
                return try scanner.identity(of: target, kind: kind)
            }
        }
    }

    /// Renames the local file at `path` that collides with another item to "Name (conflicted copy).ext" (numbered
    /// if taken), if it is still the file `expecting` names.
    private func moveAside(
        _ path: ItemPath, kind: ItemKind, expecting: LocalFileIdentity
    ) async throws -> (ItemPath, LocalFileIdentity) {
        let url = layout.url(of: path)
        let (scanner, disk) = (scanner, disk)
        let target = try await onDisk {
            try FileCoordinator().coordinate(writingItemAt: url, options: .forMoving) { url -> URL in
                try disk.coordinationBegins()
                guard let now = try? scanner.identity(of: url, kind: kind), now.isSameFile(as: expecting) else {
                    throw LocalCopyChanged()
                }
                return try Self.moveAside(url, on: disk)
            }
        }
        logger.notice("moved a local file aside", metadata: ["from": "\(path)", "to": "\(target.lastPathComponent)"])
        let relative = String(target.path.dropFirst(layout.folder.path.count + 1))
        return (try ItemPath(relative), try scanner.identity(of: target, kind: kind))
    }

    /// Renames `url` to "Name (conflicted copy).ext", numbered when taken.
    /// - Throws: `EEXIST` when a thousand names are taken (or cannot be looked at).
    static func moveAside(_ url: URL, on disk: any LocalDisk) throws -> URL {
        let folder = url.deletingLastPathComponent()
        let base = url.deletingPathExtension().lastPathComponent
        let suffix = url.pathExtension.isEmpty ? "" : "." + url.pathExtension
        var number = 1
        var target: URL
        repeat {
            guard number <= 1_000 else { throw POSIXError(.EEXIST) }
            let label = number == 1 ? "conflicted copy" : "conflicted copy \(number)"
            target = folder.appendingPathComponent("\(base) (\(label))\(suffix)", isDirectory: false)
            number += 1
        } while disk.exists(target)
        try disk.moveItem(at: url, to: target)
        return target
    }

    /// The local copy changed between the plan and the coordinated write that would replace, move or remove it.
    struct LocalCopyChanged: Error {}
}
