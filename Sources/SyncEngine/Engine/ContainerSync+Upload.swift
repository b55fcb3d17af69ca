import DocumentKit
import Foundation
import NIOCore
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension ContainerSync {
    /// Sends what changed on disk since the last round: first the queued operations on versions, then each change
    /// the scan finds. A change the service refuses (over quota, say) is recorded on its item as an upload error and
    /// the others go on; an unreachable service ends the round (the changes wait on disk for the next one).
    func pushLocalChanges(_ scope: ScanScope = .everything) async throws {
        try await sendQueuedOperations()
        let (scanner, folder) = (scanner, layout.folder)
        let scan: LocalScanner.Result
        let known: [LocalItem]
        switch scope {
        case .everything:
            scan = try await BlockingWork.run { try scanner.scan(folder) }
            known = try state.items()
        case .paths(let paths):
            let roots = Set(paths.map(scanner.itemRoot)).subtracting([""])
            if roots.isEmpty { return }
            scan = try await BlockingWork.run { scanner.scan(folder, only: roots) }
            known = try state.items(atOrBelow: roots)
        }
        for change in LocalChangeDetector.changes(known: known, scanned: scan.items) {
            do {
                try await send(change, scan: scan)
            } catch is ContentChangedWhileRead {
                continue  // a writer got in; its change is read next round
            } catch let error as ProtocolError where error.code != .internalError {
                logger.warning("a change was refused", metadata: ["change": "\(change)", "error": "\(error)"])
                let id: ItemID? =
                    if case .created(let path, _) = change { try state.item(at: path)?.id } else { change.itemID }
                if let id { try setError(ItemError(error), of: id, direction: .upload) }
            }
        }
    }

    /// Sends one change, in its item's lane: what the scan saw is checked again there, since an operation that held
    /// the lane (a download landing, an eviction, another device's move applied) may have made it stale.
    private func send(_ change: LocalChange, scan: LocalScanner.Result) async throws {
        guard let id = change.itemID else { return try await sendInLane(change, scan: scan) }
        try await inLane(id) {
            guard let item = try state.item(id), isStillTrue(change, of: item) else { return }
            try await sendInLane(change, scan: scan)
        }
    }

    /// Whether a change the scan found still stands once its item's lane is held.
    private func isStillTrue(_ change: LocalChange, of item: LocalItem) -> Bool {
        switch change {
        case .created: return true
        case .modified: return true  // read again under coordination; unchanged content sends nothing
        case .moved(_, let from, let to):
            return item.path == from && FileManager.default.fileExists(atPath: layout.url(of: to).path)
        case .deleted:
            // Evicted meanwhile (a placeholder is expected to be missing), or there again: not a deletion.
            return !item.isPlaceholder && !FileManager.default.fileExists(atPath: layout.url(of: item.path).path)
        }
    }

    private func sendInLane(_ change: LocalChange, scan: LocalScanner.Result) async throws {
        switch change {
        case .created(let path, let kind):
            guard let found = scan.items[path] else { return }
            try await create(found, kind: kind)
        case .modified(let id):
            guard let item = try state.item(id), let found = scan.items[item.path], found.kind != .directory else {
                return
            }
            try await uploadContent(of: id, kind: found.kind)
        case .moved(let id, _, let to):
            guard var item = try state.item(id) else { return }
            _ = try await client.moveItem(id, to: to, in: container)
            item.path = to
            if let found = scan.items[to],
                item.kind == .directory || item.identity?.isSameFile(as: found.identity) == true
            {
                item.identity?.changed = found.identity.changed
            }
            try save([item])
        case .deleted(let id):
            guard let item = try state.item(id) else { return }
            do {
                _ = try await client.deleteItem(id, basedOn: item.baseVersion, in: container)
                try save([], removing: [item])
            } catch let error as ProtocolError where error.code == .staleDelete {
                // Edited elsewhere meanwhile: the edit wins; the item comes back with the service's version.
                var restored = item
                restored.identity = nil
                restored.isPlaceholder = true
                try save([restored])
                if let detail = try? await client.item(id, in: container) { try await apply(detail, force: true) }
            }
        }
    }

    /// Creates a new item on the service from what is on disk: its record first, so other devices hear of it at
    /// once (as a placeholder), then its content.
    private func create(_ found: ScannedItem, kind: ItemKind) async throws {
        let id = ItemID()
        let answer: ItemResponse
        do {
            answer = try await client.createItem(CreateItemRequest(id: id, path: found.path, kind: kind), in: container)
        } catch let error as ProtocolError where error.code == .pathCollision {
            if kind == .directory {
                // Another device made the same folder: both mean the same one.
                guard
                    let existing = try await client.items(in: container).items.first(where: {
                        !$0.isDeleted && $0.kind == .directory && $0.path == found.path
                    })
                else { throw error }
                try save([LocalItem(id: existing.id, path: found.path, kind: .directory, identity: found.identity)])
            } else {
                let (content, identity) = try await readContent(at: found.path, kind: kind)
                try await resolveCollision(at: found.path, kind: kind, content: content, identity: identity)
            }
            return
        }
        if kind == .directory {
            try save([LocalItem(id: id, path: found.path, kind: .directory, identity: found.identity)])
            return
        }
        // No identity yet: until its content is committed, every scan sees the item as changed.
        try save([LocalItem(id: id, path: found.path, kind: kind, serverVersion: answer.item.currentVersion)])
        try await uploadContent(of: id, kind: kind)
    }

    /// Uploads the local content of a known item as a new version based on the one the local copy holds.
    private func uploadContent(of id: ItemID, kind: ItemKind) async throws {
        guard var item = try state.item(id) else { return }
        let (content, identity) = try await readContent(at: item.path, kind: kind)
        if item.isPlaceholder, let current = item.serverVersion,
            let version = try await client.item(id, in: container).versions.first(where: { $0.id == current }),
            version.contentHash == content.contentHash
        {
            // What was written where the placeholder was is the current version already (its download landing).
            item = try state.item(id) ?? item
            guard item.isPlaceholder else { return }
            item.identity = identity
            item.baseVersion = current
            item.contentHash = content.contentHash
            item.size = content.size
            item.isPlaceholder = false
            try save([item])
            try recordChunkLocations(of: content.manifest, for: item)
            return
        }
        if content.contentHash == item.contentHash, item.baseVersion != nil {
            item.identity = identity  // only the recorded identity was stale (or racy): nothing to send
            try save([item])
            return
        }
        try await uploadChunks(of: content, for: item)
        let version = makeVersion(of: id, content, identity, basedOn: item.baseVersion)
        let answer = try await client.commit(version, in: container)
        try await settle(&item, after: answer, uploaded: version, content: content, identity: identity)
    }

    /// A new local item whose path the service already has: the same content there, or none yet, means it is that
    /// item (a create whose answer was lost, or the same file made on two devices), which is adopted; other content
    /// there means another item, and the local one steps aside as a "conflicted copy" to be uploaded next round.
    private func resolveCollision(
        at path: ItemPath, kind: ItemKind, content: LocalContent, identity: LocalFileIdentity
    ) async throws {
        let existing = try await client.items(in: container).items.first {
            !$0.isDeleted && $0.path.collisionKey == path.collisionKey
        }
        if let existing, existing.kind == kind, existing.path == path, existing.currentVersion == nil {
            // A record whose content never came (its device was stopped between the two): this content is its first
            // version (should that device send its own later, the service keeps both).
            try save([LocalItem(id: existing.id, path: path, kind: kind)])
            try await uploadContent(of: existing.id, kind: kind)
            return
        }
        if let existing, existing.kind == kind, existing.path == path {
            let detail = try await client.item(existing.id, in: container)
            if let current = detail.versions.first(where: { $0.id == existing.currentVersion }),
                current.contentHash == content.contentHash
            {
                let item = LocalItem(
                    id: existing.id, path: path, kind: kind, identity: identity, baseVersion: current.id,
                    serverVersion: current.id, contentHash: current.contentHash, size: current.size,
                    hasUnresolvedConflicts: detail.versions.contains { $0.isConflict && !$0.isResolved })
                try save([item])
                try recordChunkLocations(of: content.manifest, for: item)
                return
            }
        }
        try moveAside(layout.url(of: path))
    }

    /// Records what a commit did: a version that became current (or was already there) is now the local base; one
    /// kept as a conflict leaves the service's current version to come down.
    private func settle(
        _ item: inout LocalItem, after answer: ItemResponse, uploaded version: VersionRecord, content: LocalContent,
        identity: LocalFileIdentity
    ) async throws {
        item.serverVersion = answer.item.currentVersion
        switch answer.outcome {
        case .conflict:
            item.hasUnresolvedConflicts = true
            item.uploadError = nil
            // The local content is safe on the service as a conflict version: the current one may replace it. The
            // recorded identity and hash are this content's (what a replace checks it still is).
            item.isPlaceholder = false
            item.identity = identity
            item.contentHash = content.contentHash
            try save([item])
            try await apply(try await client.item(item.id, in: container), force: true)
        default:
            item.baseVersion = answer.version?.id ?? version.id
            item.contentHash = content.contentHash
            item.size = content.size
            item.identity = identity
            item.isPlaceholder = false
            item.uploadError = nil
            try save([item])
            try state.setCurrentVersionRecord(answer.version ?? version, of: item.id)
            try recordChunkLocations(of: content.manifest, for: item)
        }
    }

    /// Chunks and hashes the file or package at `path` under a coordinated read; the identity is taken inside the
    /// same access, and an item that changed while it was read is refused (it is read again next round).
    func readContent(at path: ItemPath, kind: ItemKind) async throws -> (LocalContent, LocalFileIdentity) {
        let url = layout.url(of: path)
        let (scanner, chunker) = (scanner, configuration.chunker)
        return try await BlockingWork.run {
            try Self.readContent(at: url, path: path, kind: kind, scanner: scanner, chunker: chunker)
        }
    }

    private static func readContent(
        at url: URL, path: ItemPath, kind: ItemKind, scanner: LocalScanner, chunker: FileChunker
    ) throws -> (LocalContent, LocalFileIdentity) {
        try FileCoordinator().coordinate(readingItemAt: url) { url in
            let before = try scanner.identity(of: url, kind: kind)
            let content =
                kind == .package
                ? try LocalContent(package: url, chunker: chunker)
                : try LocalContent(file: url, chunker: chunker)
            guard try scanner.identity(of: url, kind: kind) == before else { throw ContentChangedWhileRead() }
            return (content, before)
        }
    }

    /// How many chunks move at once in one upload or download: enough to keep the connection and the service's
    /// disk busy while each chunk waits for its answer.
    static let transferWindow = 8

    /// The most bytes of chunks one upload request carries.
    static let batchBytes = 4 << 20

    /// Uploads the chunks of `content` the service lacks in batches of a few megabytes, a few batches at a time,
    /// reading each chunk from its file by its offset; the item's upload progress counts the chunks the service has
    /// as done.
    private func uploadChunks(of content: LocalContent, for item: LocalItem) async throws {
        let missing = try await client.missingChunks(content.manifest.chunks, in: container)
        let pending = missing.reduce(Int64(0)) { $0 + (content.sources[$1]?.size ?? 0) }
        setTransfer(ItemTransfer(direction: .upload, completed: content.size - pending, total: content.size), of: item)
        defer { setTransfer(nil, of: item) }
        var batches: [[(ChunkHash, LocalContent.Source)]] = [[]]
        var filled: Int64 = 0
        for hash in missing {
            guard let source = content.sources[hash] else { continue }
            if filled + source.size > Self.batchBytes, !batches[batches.count - 1].isEmpty {
                batches.append([])
                filled = 0
            }
            batches[batches.count - 1].append((hash, source))
            filled += source.size
        }
        let (client, container) = (client, container)
        let work = batches.filter { !$0.isEmpty }
        let window = max(1, Self.transferWindow / 2)
        try await withThrowingTaskGroup(of: Int64.self) { group in
            var next = 0
            var running = 0
            while next < work.count || running > 0 {
                if next < work.count, running < window {
                    let batch = work[next]
                    next += 1
                    running += 1
                    group.addTask { try await Self.upload(batch, client: client, container: container) }
                } else if let done = try await group.next() {
                    running -= 1
                    advanceTransfer(of: item, by: done)
                }
            }
        }
    }

    /// Reads a batch of chunks from their files and uploads them in one request.
    /// - Returns: Their length in all.
    private static func upload(
        _ batch: [(ChunkHash, LocalContent.Source)], client: ServiceClient, container: ContainerID
    ) async throws -> Int64 {
        var chunks: [(hash: ChunkHash, bytes: ByteBuffer)] = []
        var total: Int64 = 0
        for (hash, source) in batch {
            let descriptor = open(source.file.path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            defer { close(descriptor) }
            var buffer = ByteBuffer()
            let count = Int(source.size)
            let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
                max(0, pread(descriptor, bytes.baseAddress, count, off_t(source.offset)))
            }
            guard read == count else { throw POSIXError(.EIO) }
            chunks.append((hash, buffer))
            total += Int64(count)
        }
        try await client.uploadChunks(chunks, in: container)
        return total
    }

    /// An item changed between the identity taken before reading it and the one after.
    struct ContentChangedWhileRead: Error {}

    private func makeVersion(
        of id: ItemID, _ content: LocalContent, _ identity: LocalFileIdentity, basedOn: VersionID?
    ) -> VersionRecord {
        VersionRecord(
            id: VersionID(), itemID: id, manifest: content.manifest, contentHash: content.contentHash,
            modificationDate: Date(timeIntervalSince1970: Double(identity.modified) / 1e9), savingDevice: device,
            basedOn: basedOn)
    }
}
