import Crypto
import DocumentKit
import Foundation
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension ContainerSync {
    /// The service's feed token key in the state database.
    static let feedTokenKey = "feedToken"

    /// Follows the container's change feed from the stored token and applies each touched item's new state.
    func pullRemoteChanges() async throws {
        var token = try state.value(forKey: Self.feedTokenKey).map(ChangeToken.init)
        while true {
            let page: ChangePage
            do {
                page = try await client.changes(in: container, since: token, limit: 500)
            } catch let error as ProtocolError where error.code == .changeTokenExpired {
                token = nil  // the feed was reset: read it again from the start; applying is idempotent
                continue
            }
            var touched: [ItemID] = []
            for change in page.changes where !touched.contains(change.itemID) { touched.append(change.itemID) }
            for id in touched { try await apply(try await client.item(id, in: container), force: false) }
            token = page.nextToken
            try state.setValue(page.nextToken.string, forKey: Self.feedTokenKey)
            if !page.hasMore { break }
        }
        // Downloads that failed for a reason of their own (recorded on the item) are tried again each round.
        for item in try state.itemsWithDownloadErrors() {
            do {
                try await download(item.path)
            } catch let error as ProtocolError where error.code != .internalError {
                continue  // still failing: recorded again
            }
        }
    }

    /// Makes the local copy of an item match the service's record: placeholders for new items, moves, deletions,
    /// other versions (recorded, and told to presenters), and new content when the local copy has no edits of its
    /// own (an edited copy is uploaded with its old base next round, which the service keeps as a conflict version —
    /// nothing is overwritten).
    func apply(_ detail: ItemDetail, force: Bool) async throws {
        try await inLane(detail.item.id) { try await applyInLane(detail, force: force) }
    }

    private func applyInLane(_ detail: ItemDetail, force: Bool) async throws {
        let record = detail.item
        let known = try state.item(record.id)
        let current = detail.versions.first { $0.id == record.currentVersion }
        let conflicts = detail.versions.contains { $0.isConflict && !$0.isResolved }

        if record.isDeleted {
            guard let known else { return }
            // Removed only if it is still the content last in step, checked inside the coordinated delete: a save
            // that landed since stays, and the next scan uploads it as a new item — a delete never takes content
            // saved after the state it was based on.
            if !known.isPlaceholder { try await removeLocalCopy(of: known) }
            try save([], removing: [known])
            try? FileManager.default.removeItem(at: layout.versions.appendingPathComponent(known.id.string))
            return
        }
        var item =
            known
            ?? LocalItem(
                id: record.id, path: record.path, kind: record.kind, size: current?.size ?? 0,
                isPlaceholder: record.kind != .directory)
        if let known, known.path != record.path {
            try await moveLocalCopy(of: known, to: record.path)
            item.path = record.path
            if let identity = try? scanner.identity(of: layout.url(of: record.path), kind: record.kind),
                known.identity != nil
            {
                item.identity = identity
            }
        }
        item.serverVersion = record.currentVersion
        item.hasUnresolvedConflicts = conflicts
        if record.kind == .directory {
            try FileManager.default.createDirectory(at: layout.url(of: record.path), withIntermediateDirectories: true)
            item.identity = try scanner.identity(of: layout.url(of: record.path), kind: .directory)
            try save([item])
            return
        }
        if let current { item.size = current.size }
        try save([item])
        if let current { try state.setCurrentVersionRecord(current, of: item.id) }
        try recordOtherVersions(detail.versions.filter { $0.id != record.currentVersion }, of: item)
        guard let current else { return }
        if item.baseVersion == current.id && !item.isPlaceholder { return }  // already in step
        // Local edits stay until they are uploaded (as a conflict version, based on the old version); `force`
        // says they already were.
        if !item.isPlaceholder, !force, !(try isUnmodified(item)) { return }
        if item.isPlaceholder && current.size > configuration.eagerDownloadLimit { return }  // on demand
        do {
            try await download(current, into: item)
        } catch is LocalCopyChanged {
            return  // the local edit goes up next round (as a conflict version); this version comes down after
        } catch let error as ProtocolError where error.code != .internalError {
            // Recorded on the item (its download error) for the app to see; the rest of the feed goes on.
            logger.warning("a download failed", metadata: ["path": "\(item.path)", "error": "\(error)"])
        }
    }

    /// Records the item's versions other than the current one and tells listeners and presenters what changed:
    /// conflict versions gained, versions lost (their downloaded copies removed), conflicts resolved.
    private func recordOtherVersions(_ versions: [VersionRecord], of item: LocalItem) throws {
        let recorded = try state.otherVersions(of: item.id)
        // Compared as reads show them: changes made on this device and not sent yet over both sides, so a round
        // that asked the service before such a change neither undoes it nor announces it again.
        let before = Dictionary(
            try state.applyingQueuedOperations(to: recorded, of: item).map { ($0.id, $0) }
        ) { first, _ in first }
        let after = Dictionary(
            try state.applyingQueuedOperations(to: versions, of: item).map { ($0.id, $0) }
        ) { first, _ in first }
        if Set(recorded) != Set(versions) { try state.setOtherVersions(versions, of: item.id) }
        guard before != after else { return }
        let url = layout.url(of: item.path)
        for version in versions where before[version.id] == nil && version.isConflict && !version.isResolved {
            hub.send(.versionGained(item.id, item.path, version))
            FileCoordinator.announce(.gained(Self.presented(version)), ofItemAt: url)
        }
        // A conflict version marked resolved, or gone while unresolved (removed with the resolution), is resolved.
        for (id, old) in before where old.isConflict && !old.isResolved && after[id]?.isResolved != false {
            let version = after[id] ?? old
            hub.send(.versionResolved(item.id, item.path, version))
            FileCoordinator.announce(.resolved(Self.presented(version)), ofItemAt: url)
        }
        for (id, version) in before where after[id] == nil {
            try? FileManager.default.removeItem(
                at: layout.versions.appendingPathComponent(item.id.string).appendingPathComponent(id.string))
            hub.send(.versionLost(item.id, item.path, version))
            FileCoordinator.announce(.lost(Self.presented(version)), ofItemAt: url)
        }
    }

    static func presented(_ version: VersionRecord) -> PresentedItemVersion {
        PresentedItemVersion(
            persistentIdentifier: version.id.string, isConflict: version.isConflict,
            modificationDate: version.modificationDate, savingComputer: version.savingDevice.name)
    }

    /// Downloads the current content of the item at `path` (a placeholder, or an out-of-date copy).
    public func download(_ path: ItemPath) async throws {
        guard let found = try state.item(at: path) else {
            throw ProtocolError(.itemNotFound, "no item at \(path) in container \(container)")
        }
        try await inLane(found.id) { try await downloadInLane(path) }
    }

    private func downloadInLane(_ path: ItemPath) async throws {
        // Read again inside the lane: an operation that held it may have moved, removed or downloaded the item.
        guard var item = try state.item(at: path) else {
            throw ProtocolError(.itemNotFound, "no item at \(path) in container \(container)")
        }
        let detail = try await client.item(item.id, in: container)
        guard let current = detail.versions.first(where: { $0.id == detail.item.currentVersion }) else { return }
        if item.serverVersion != current.id {
            item.serverVersion = current.id  // heard just now: the download lands as the current version
            try save([item])
        }
        if item.baseVersion == current.id, !item.isPlaceholder, try isUnmodified(item) { return }  // in step
        do {
            try await download(current, into: item)
        } catch is LocalCopyChanged {
            throw ProtocolError(
                .notUploaded, "\(path) has changes that are not on the service yet; they go up with the next sync")
        }
    }

    /// The local copy of a version of the item at `path`: the item's own file when the local copy holds that
    /// version, else a copy in `.ubiquity/versions/<item>/<version>/` (downloaded the first time it is asked for,
    /// never into `Documents/`).
    /// - Throws: ``ProtocolError/Code/itemNotFound``, ``ProtocolError/Code/unknownVersion``; download errors.
    public func contents(of versionID: VersionID, at path: ItemPath) async throws -> URL {
        guard let found = try state.item(at: path) else {
            throw ProtocolError(.itemNotFound, "no item at \(path) in container \(container)")
        }
        return try await inLane(found.id) { try await contentsInLane(of: versionID, at: path) }
    }

    private func contentsInLane(of versionID: VersionID, at path: ItemPath) async throws -> URL {
        guard let item = try state.item(at: path) else {
            throw ProtocolError(.itemNotFound, "no item at \(path) in container \(container)")
        }
        if item.baseVersion == versionID, !item.isPlaceholder, try isUnmodified(item) { return layout.url(of: path) }
        let folder = layout.versions.appendingPathComponent(item.id.string).appendingPathComponent(versionID.string)
        let copy = folder.appendingPathComponent(path.name)
        if FileManager.default.fileExists(atPath: copy.path) { return copy }
        var version = try state.otherVersions(of: item.id).first { $0.id == versionID }
        if version == nil {
            version = try await client.item(item.id, in: container).versions.first { $0.id == versionID }
        }
        guard let version else {
            throw ProtocolError(.unknownVersion, "\(versionID) is not a version of \(path)")
        }
        let assembled = try await assembleOnce(version, of: item, purpose: "version")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: copy.path) {
            try FileManager.default.moveItem(at: assembled, to: copy)
        }
        return copy
    }

    /// Assembles `version` in `.ubiquity/tmp/`, checks it against its hashes, and puts it in place with a
    /// coordinated write (an open document sees another writer's change). The item's download progress and
    /// download error are kept up to date.
    private func download(_ version: VersionRecord, into item: LocalItem) async throws {
        let temporary: URL
        do {
            temporary = try await assembleOnce(version, of: item, purpose: "download")
        } catch {
            if !(error is CancellationError) { try? setError(ItemError(error), of: item.id, direction: .download) }
            throw error
        }
        guard let item = try state.item(item.id) else { return }  // removed meanwhile
        let destination = layout.url(of: item.path)
        try FileManager.default.createDirectory(
            at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        let replaced = layout.temporary.appendingPathComponent(UUID().uuidString.lowercased())
        let (scanner, chunker, kind) = (scanner, configuration.chunker, item.kind)
        let (expected, expectedHash) = (item.identity, item.contentHash)
        // The identity recorded is the one of the bytes just placed: taken inside the coordinated write, and only
        // if the placed item is still the assembled one (same inode, size and modification time); if another
        // writer got in first, the assembled identity is recorded, so the next scan sees that writer's change.
        let placed: LocalFileIdentity
        do {
            placed = try await BlockingWork.run {
                let assembled = try scanner.identity(of: temporary, kind: kind)
                return try FileCoordinator().coordinate(writingItemAt: destination, options: .forReplacing) { url in
                    // Only content that is safe (on the service, or nothing at all) is replaced: a save that
                    // landed since the engine decided to download — one a presenter made when asked to make way,
                    // say — stays, and goes up next round.
                    let check = Self.checkLocalCopy(
                        at: url, recorded: expected, contentHash: expectedHash, kind: kind, scanner: scanner,
                        chunker: chunker)
                    // A placeholder's path must be empty; a recorded copy must be there, unchanged (gone: the
                    // user deleted it here, which goes up next round).
                    guard expected == nil ? check == .absent : check == .unchanged else { throw LocalCopyChanged() }
                    var isDirectory: ObjCBool = false
                    if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory),
                        isDirectory.boolValue
                    {
                        try FileManager.default.moveItem(at: url, to: replaced)  // an old package makes way whole
                    }
                    guard rename(temporary.path, url.path) == 0 else {
                        throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                    }
                    let now = try scanner.identity(of: url, kind: kind)
                    return now.isUnchanged(since: assembled) ? now : assembled
                }
            }
        } catch is LocalCopyChanged {
            try? FileManager.default.removeItem(at: temporary)
            logger.notice(
                "a save landed before the download was put in place; it goes up first",
                metadata: ["path": "\(item.path)"])
            throw LocalCopyChanged()
        }
        try? FileManager.default.removeItem(at: replaced)
        var updated = item
        updated.identity = placed
        updated.baseVersion = version.id
        updated.contentHash = version.contentHash
        updated.size = version.size
        updated.isPlaceholder = false
        updated.downloadError = nil
        try save([updated])
        try recordChunkLocations(of: version.manifest, for: updated)
    }

    /// The local copy changed between the decision to download and the coordinated write that would replace it.
    struct LocalCopyChanged: Error {}

    /// The name of a partial download in `.ubiquity/tmp/` ends so; it survives a restart and is resumed.
    static let partialSuffix = ".partial"

    /// Assembles `version` in `.ubiquity/tmp/` once: a second caller for the same content waits for the first.
    /// - Returns: The assembled file or package, checked against its hashes, for the caller to move.
    private func assembleOnce(_ version: VersionRecord, of item: LocalItem, purpose: String) async throws -> URL {
        let name = "\(item.id.string).\(version.id.string).\(purpose)\(Self.partialSuffix)"
        if let running = downloads[name] { return try await running.value }
        let task = Task { try await self.assemble(version, of: item, named: name) }
        downloads[name] = task
        defer { downloads[name] = nil }
        let partial = try await task.value
        // Handed over under a name of its own: the partial name is free for the next download of this content.
        let handed = layout.temporary.appendingPathComponent(UUID().uuidString.lowercased())
        try FileManager.default.moveItem(at: partial, to: handed)
        return handed
    }

    private func assemble(_ version: VersionRecord, of item: LocalItem, named name: String) async throws -> URL {
        let temporary = layout.temporary.appendingPathComponent(name)
        // Partial downloads of other versions of this item are of no more use.
        let prefix = "\(item.id.string)."
        for other in (try? FileManager.default.contentsOfDirectory(atPath: layout.temporary.path)) ?? []
        where other.hasPrefix(prefix) && other != name && other.hasSuffix(Self.partialSuffix) && downloads[other] == nil
        {
            try? FileManager.default.removeItem(at: layout.temporary.appendingPathComponent(other))
        }
        setTransfer(ItemTransfer(direction: .download, completed: 0, total: version.size), of: item)
        defer { setTransfer(nil, of: item) }
        switch version.manifest {
        case .file(let chunks):
            let hash = try await assemble(chunks, into: temporary, for: item)
            guard hash == version.contentHash else {
                try? FileManager.default.removeItem(at: temporary)
                throw ProtocolError(
                    .chunkHashMismatch, "the downloaded content of \(item.path) does not match its hash")
            }
        case .package(let entries):
            guard try LocalContent.hash(of: version.manifest) == version.contentHash else {
                throw ProtocolError(.chunkHashMismatch, "the manifest of \(item.path) does not match its hash")
            }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: temporary.path, isDirectory: &isDirectory), !isDirectory.boolValue
            {
                try FileManager.default.removeItem(at: temporary)
            }
            try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
            for entry in entries {
                let member = temporary.appendingPathComponent(entry.path.string)
                if entry.kind == .directory {
                    try FileManager.default.createDirectory(at: member, withIntermediateDirectories: true)
                } else {
                    try FileManager.default.createDirectory(
                        at: member.deletingLastPathComponent(), withIntermediateDirectories: true)
                    _ = try await assemble(entry.chunks, into: member, for: item)
                }
            }
        }
        return temporary
    }

    /// Fills the file at `url` with `chunks`, checking each against its hash, and flushes it. A partial file left by
    /// an interrupted download is kept as far as its chunks check out; each further chunk is taken from a local file
    /// that has it (the previous local version, another item) when one does, and downloaded otherwise — a few at a
    /// time, each written at its offset as it arrives, the whole content hashed in order.
    /// - Returns: The SHA-256 of the whole file.
    private func assemble(_ chunks: [ChunkReference], into url: URL, for item: LocalItem) async throws -> ChunkHash {
        let descriptor = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        var whole = SHA256()
        var offset: Int64 = 0
        var index = 0
        // What a previous attempt wrote, as far as it checks out.
        while index < chunks.count, let bytes = Self.read(descriptor, at: offset, count: Int(chunks[index].size)),
            (try? ChunkHash(digest: SHA256.hash(data: bytes))) == chunks[index].hash
        {
            whole.update(data: bytes)
            offset += chunks[index].size
            advanceTransfer(of: item, by: chunks[index].size)
            index += 1
        }
        guard ftruncate(descriptor, off_t(offset)) == 0 else { throw POSIXError(.EIO) }
        var offsets: [Int64] = []
        offsets.reserveCapacity(chunks.count)
        var position: Int64 = 0
        for chunk in chunks {
            offsets.append(position)
            position += chunk.size
        }
        let (client, container, state, folder) = (client, container, state, layout.folder)
        let window = Self.transferWindow
        let prefix = whole
        let hasher = try await withThrowingTaskGroup(of: (Int, Data).self) { group in
            var whole = prefix
            var next = index  // the next chunk to start
            var hashed = index  // the next chunk to hash
            var running = 0
            var arrived: [Int: Data] = [:]  // written, waiting for the chunks before them to be hashed
            while hashed < chunks.count {
                // Bounded: at most `window` in flight, and never far ahead of the oldest chunk not yet hashed.
                if next < chunks.count, running < window, next < hashed + 4 * window {
                    let (number, chunk) = (next, chunks[next])
                    next += 1
                    running += 1
                    group.addTask {
                        (
                            number,
                            try await Self.fetch(
                                chunk, client: client, container: container, state: state, folder: folder)
                        )
                    }
                    continue
                }
                guard let (number, bytes) = try await group.next() else { break }
                running -= 1
                try Self.write(bytes, to: descriptor, at: offsets[number])
                arrived[number] = bytes
                while let bytes = arrived.removeValue(forKey: hashed) {
                    whole.update(data: bytes)
                    advanceTransfer(of: item, by: Int64(bytes.count))
                    hashed += 1
                }
            }
            return whole
        }
        try await BlockingWork.run { guard fsync(descriptor) == 0 else { throw POSIXError(.EIO) } }
        return try ChunkHash(digest: hasher.finalize())
    }

    /// The bytes of one chunk, checked against its hash: from a local file that has it, else from the service.
    private static func fetch(
        _ chunk: ChunkReference, client: ServiceClient, container: ContainerID, state: LocalStateStore, folder: URL
    ) async throws -> Data {
        if let bytes = try localCopy(of: chunk, state: state, folder: folder) { return bytes }
        var bytes = Data()
        bytes.reserveCapacity(Int(chunk.size))
        try await client.downloadChunk(chunk.hash, in: container) { piece in
            bytes.append(contentsOf: piece.readableBytesView)
        }
        guard (try? ChunkHash(digest: SHA256.hash(data: bytes))) == chunk.hash else {
            throw ProtocolError(.chunkHashMismatch, "chunk \(chunk.hash) arrived with other bytes")
        }
        return bytes
    }

    /// The bytes of `chunk` from a local file that holds it, checked against its hash.
    private static func localCopy(of chunk: ChunkReference, state: LocalStateStore, folder: URL) throws -> Data? {
        for location in try state.chunkLocations(of: chunk.hash) where Int64(location.size) == chunk.size {
            let descriptor = open(folder.appendingPathComponent(location.file).path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            if let bytes = read(descriptor, at: location.offset, count: location.size),
                (try? ChunkHash(digest: SHA256.hash(data: bytes))) == chunk.hash
            {
                return bytes
            }
        }
        return nil
    }

    private static func read(_ descriptor: Int32, at offset: Int64, count: Int) -> Data? {
        var data = Data(count: count)
        let read = data.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
        return read == count ? data : nil
    }

    private static func write(_ data: Data, to descriptor: Int32, at offset: Int64) throws {
        var done = 0
        while done < data.count {
            let written = data.withUnsafeBytes {
                pwrite(descriptor, $0.baseAddress! + done, data.count - done, off_t(offset) + off_t(done))
            }
            guard written > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            done += written
        }
    }

    /// Moves a local file the engine does not know out of the way of a download to the same path: it becomes
    /// "Name (conflicted copy).ext" (numbered if taken) and is uploaded as an item of its own next round.
    func moveAside(_ url: URL) throws {
        let folder = url.deletingLastPathComponent()
        let base = url.deletingPathExtension().lastPathComponent
        let suffix = url.pathExtension.isEmpty ? "" : "." + url.pathExtension
        var number = 1
        var target: URL
        repeat {
            let label = number == 1 ? "conflicted copy" : "conflicted copy \(number)"
            target = folder.appendingPathComponent("\(base) (\(label))\(suffix)")
            number += 1
        } while FileManager.default.fileExists(atPath: target.path)
        try FileManager.default.moveItem(at: url, to: target)
        logger.notice("moved a local file aside", metadata: ["from": "\(url.path)", "to": "\(target.path)"])
    }

    /// Whether the local copy is as it was when last in step (so replacing or removing it loses nothing), as far as
    /// its identity tells; what acts on it checks again inside its coordinated write (``checkLocalCopy``).
    func isUnmodified(_ item: LocalItem) throws -> Bool {
        guard let identity = item.identity else { return item.isPlaceholder }
        guard let now = try? scanner.identity(of: layout.url(of: item.path), kind: item.kind) else { return true }
        return now.isUnchanged(since: identity)
    }

    /// Removes the local copy of an item deleted elsewhere, if it is still the content last in step: checked and
    /// removed inside one coordinated delete, so a save landing meanwhile either comes first (and the copy stays,
    /// to be uploaded as a new item) or after (and writes a new file).
    func removeLocalCopy(of item: LocalItem) async throws {
        let url = layout.url(of: item.path)
        let (scanner, chunker, kind) = (scanner, configuration.chunker, item.kind)
        let (recorded, hash) = (item.identity, item.contentHash)
        let removed = try await BlockingWork.run {
            try FileCoordinator().coordinate(writingItemAt: url, options: .forDeleting) { url -> Bool in
                let check = Self.checkLocalCopy(
                    at: url, recorded: recorded, contentHash: hash, kind: kind, scanner: scanner, chunker: chunker)
                guard check == .unchanged else { return false }
                try FileManager.default.removeItem(at: url)
                return true
            }
        }
        if !removed, FileManager.default.fileExists(atPath: url.path) {
            logger.notice(
                "an item deleted elsewhere has changes here; they stay and go up as a new item",
                metadata: ["path": "\(item.path)"])
        }
    }

    /// Moves the local copy of an item that was moved elsewhere (a placeholder has nothing to move).
    private func moveLocalCopy(of item: LocalItem, to path: ItemPath) async throws {
        let from = layout.url(of: item.path)
        let to = layout.url(of: path)
        guard FileManager.default.fileExists(atPath: from.path), !FileManager.default.fileExists(atPath: to.path) else {
            return
        }
        try FileManager.default.createDirectory(at: to.deletingLastPathComponent(), withIntermediateDirectories: true)
        try await BlockingWork.run {
            try FileCoordinator().coordinate(writingItemAt: from, options: .forMoving, writingItemAt: to, options: []) {
                from, to in
                try FileManager.default.moveItem(at: from, to: to)
            }
        }
    }
}
