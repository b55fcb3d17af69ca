import Crypto
import DocumentKit
import Foundation
import UbiquityProtocol

extension ContainerSync {
    /// Records the item's versions other than the current one and tells listeners and presenters what changed:
    /// conflict versions gained, versions lost (their downloaded copies removed), conflicts resolved.
    func recordOtherVersions(_ versions: [VersionRecord], of item: LocalItem, wasKnown: Bool = true) throws {
        // An item heard of for the first time has none recorded (its versions go with its record).
        let recorded = wasKnown ? try state.otherVersions(of: item.id) : []
        // None before and none now: the queued changes would make the same of both.
        if recorded.isEmpty && versions.isEmpty { return }
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
            try? disk.removeItem(
                at: layout.versions.appendingPathComponent(item.id.string, isDirectory: true).appendingPathComponent(
                    id.string, isDirectory: true))
            hub.send(.versionLost(item.id, item.path, version))
            FileCoordinator.announce(.lost(Self.presented(version)), ofItemAt: url)
        }
    }

    static func presented(_ version: VersionRecord) -> PresentedItemVersion {
        PresentedItemVersion(
            persistentIdentifier: version.id.string, isConflict: version.isConflict,
            modificationDate: version.modificationDate, savingComputer: version.savingDevice.name)
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
        let folder = layout.versions.appendingPathComponent(item.id.string, isDirectory: true).appendingPathComponent(
            versionID.string, isDirectory: true)
        let copy = folder.appendingPathComponent(path.name, isDirectory: false)
        if disk.exists(copy) { return copy }
        var version = try state.otherVersions(of: item.id).first { $0.id == versionID }
        if version == nil {
            version = try await detail(of: item.id).versions.first { $0.id == versionID }
        }
        guard let version else {
            throw ProtocolError(.unknownVersion, "\(versionID) is not a version of \(path)")
        }
        let assembled = try await assembleOnce(version, of: item, purpose: "version")
        do {
            try disk.createDirectory(at: folder)
            if disk.exists(copy) {
                try? disk.removeItem(at: assembled)  // another request put the copy there first
            } else {
                try disk.moveItem(at: assembled, to: copy)
            }
        } catch {
            try? disk.removeItem(at: assembled)
            throw error
        }
        return copy
    }

    /// The name of a partial download in `.ubiquity/tmp/` ends so; it survives a restart and is resumed.
    static let partialSuffix = ".partial"

    /// Assembles `version` in `.ubiquity/tmp/` once: a second caller for the same content waits for the first.
    /// - Returns: The assembled file or package, checked against its hashes, for the caller to move.
    func assembleOnce(_ version: VersionRecord, of item: LocalItem, purpose: String) async throws -> URL {
        let name = Self.partialName(of: item.id, version: version.id, purpose: purpose)
        if let running = downloads[name] { return try await running.value }
        let task = Task(executorPreference: configuration.taskExecutor) {
            try await self.assemble(version, of: item, named: name)
        }
        downloads[name] = task
        defer { downloads[name] = nil }
        let partial = try await task.value
        // Handed over under a name of its own: the partial name is free for the next download of this content.
        let handed = layout.temporary.appendingPathComponent(
            newIdentifier().uuidString.lowercased(), isDirectory: false)
        try disk.moveItem(at: partial, to: handed)
        partialFiles?.remove(name)
        return handed
    }

    private func assemble(_ version: VersionRecord, of item: LocalItem, named name: String) async throws -> URL {
        let temporary = layout.temporary.appendingPathComponent(name, isDirectory: false)
        // What a fetch of the version's draft wrote in order is taken as it is, once the fetch has stopped.
        let trusted = await stopPrefetch(named: name)
        // Partial downloads of other versions of this item are of no more use.
        let prefix = "\(item.id.string)."
        for other in listPartialFiles()
        where other.hasPrefix(prefix) && other != name && downloads[other] == nil && !isPrefetched(other) {
            removePartialFile(named: other)
        }
        partialFiles?.insert(name)
        setTransfer(ItemTransfer(direction: .download, completed: 0, total: version.size), of: item)
        defer { setTransfer(nil, of: item) }
        switch version.manifest {
        case .file(let chunks):
            // The chunks downloaded are checked by the whole content's hash alone (one pass over the bytes, not two);
            // should it not match, the first chunk that does not is found and the partial file cut there.
            let hash = try await assemble(
                chunks, into: temporary, for: item, checkingEachChunk: false, trusting: trusted)
            guard hash == version.contentHash else {
                try? await onDisk { [disk] in try Self.cutAtFirstWrongChunk(chunks, of: temporary, disk: disk) }
                throw ProtocolError(
                    .chunkHashMismatch, "the downloaded content of \(item.path) does not match its hash")
            }
        case .package(let entries):
            guard try LocalContent.hash(of: version.manifest) == version.contentHash else {
                throw ProtocolError(.chunkHashMismatch, "the manifest of \(item.path) does not match its hash")
            }
            if let found = disk.identity(at: temporary), !found.isDirectory { try disk.removeItem(at: temporary) }
            try disk.createDirectory(at: temporary)
            for entry in entries {
                let member = temporary.appendingPathComponent(entry.path.string, isDirectory: false)
                if entry.kind == .directory {
                    try disk.createDirectory(at: member)
                } else {
                    try disk.createDirectory(at: member.deletingLastPathComponent())
                    // A member's bytes have no hash of their own: each chunk is checked.
                    _ = try await assemble(entry.chunks, into: member, for: item, checkingEachChunk: true)
                }
            }
        }
        return temporary
    }

    /// Cuts the partial file at `url` before the first of `chunks` whose bytes there are not its hash's (a resumed
    /// download fetches from there).
    private static func cutAtFirstWrongChunk(_ chunks: [ChunkReference], of url: URL, disk: any LocalDisk) throws {
        let file = try disk.openFile(at: url)
        var offset: Int64 = 0
        for chunk in chunks {
            guard let bytes = file.read(at: offset, count: Int(chunk.size)),
                (try? ChunkHash(digest: SHA256.hash(data: bytes))) == chunk.hash
            else { break }
            offset += chunk.size
        }
        try file.truncate(to: offset)
    }

    /// Fills the file at `url` with `chunks` and flushes it. A partial file left by an interrupted download is kept
    /// as far as its chunks check out; each further chunk is taken from a local file that has it (the previous local
    /// version, another item; checked against its hash) when one does, and downloaded otherwise — a few at a time,
    /// each written at its offset as it arrives, the whole content hashed in order. A downloaded chunk is checked
    /// against its own hash only when `checkingEachChunk` (the caller checks the whole content's hash otherwise).
    /// - Returns: The SHA-256 of the whole file.
    private func assemble(
        _ chunks: [ChunkReference], into url: URL, for item: LocalItem, checkingEachChunk: Bool,
        trusting trusted: DraftProgress = DraftProgress()
    ) async throws -> ChunkHash {
        let opened = UncheckedFile(try disk.openFile(at: url))
        let file = opened.file
        var whole = SHA256()
        var offset: Int64 = 0
        var index = 0
        // The bytes a fetch of the version's draft wrote in order from the start are taken as they are, checked with
        // the rest by the whole content's hash (a mismatch cuts the file at its first wrong chunk). When they end
        // where a chunk ends, their hash so far is the fetch's: they are not read again.
        if !checkingEachChunk, trusted.bytes > 0, file.read(at: trusted.bytes - 1, count: 1) != nil,
            let end = Self.chunkCount(of: chunks, endingAt: trusted.bytes)
        {
            whole = trusted.hasher
            offset = trusted.bytes
            index = end
            advanceTransfer(of: item, by: offset)
        }
        // Then what a previous attempt wrote, as far as its chunks check out (it wrote them as they came, so there
        // may be gaps).
        while index < chunks.count, let bytes = file.read(at: offset, count: Int(chunks[index].size)),
            (!checkingEachChunk && offset + chunks[index].size <= trusted.bytes)
                || (try? ChunkHash(digest: SHA256.hash(data: bytes))) == chunks[index].hash
        {
            whole.update(data: bytes)
            offset += chunks[index].size
            advanceTransfer(of: item, by: chunks[index].size)
            index += 1
        }
        try file.truncate(to: offset)
        var offsets: [Int64] = []
        offsets.reserveCapacity(chunks.count)
        var position: Int64 = 0
        for chunk in chunks {
            offsets.append(position)
            position += chunk.size
        }
        let (chunkRequests, held, folder, disk) = (chunkRequests, heldChunks, layout.folder, disk)
        // Where local files hold the chunks still to come, asked once for all (off the actor: many look-ups).
        let (state, wanted) = (state, chunks[index...].map(\.hash))
        let local = try await onDisk { try state.chunkLocations(of: wanted) }
        let prefix = whole
        let hasher = try await withThrowingTaskGroup(of: (Int, Data).self) { group in
            var whole = prefix
            var next = index  // the next chunk to start
            var hashed = index  // the next chunk to hash
            var ahead: Int64 = 0  // the bytes of the chunks started and not yet hashed
            var arrived: [Int: Data] = [:]  // written, waiting for the chunks before them to be hashed
            var unstarted: Int64 = 0  // bytes written since their writing to disk was last started
            while hashed < chunks.count {
                // Bounded: the chunks asked for, or written and waiting for an earlier one to be hashed, hold at most
                // about `downloadWindowBytes` (always at least one chunk) and `downloadWindowChunks`.
                if next < chunks.count, next - hashed < Self.downloadWindowChunks,
                    next == hashed || ahead + chunks[next].size <= Self.downloadWindowBytes
                {
                    let (number, chunk) = (next, chunks[next])
                    next += 1
                    ahead += chunk.size
                    group.addTask {
                        (
                            number,
                            try await Self.fetch(
                                chunk, requests: chunkRequests, held: held, local: local[chunk.hash] ?? [],
                                folder: folder, disk: disk, checking: checkingEachChunk)
                        )
                    }
                    continue
                }
                guard let (number, bytes) = try await group.next() else { break }
                try opened.file.write(bytes, at: offsets[number])
                arrived[number] = bytes
                unstarted += Int64(bytes.count)
                if unstarted >= Self.downloadWindowBytes {
                    // Written to disk as it comes, so the flush at the end finds little left to do.
                    opened.file.startWriting()
                    unstarted = 0
                }
                while let bytes = arrived.removeValue(forKey: hashed) {
                    whole.update(data: bytes)
                    advanceTransfer(of: item, by: Int64(bytes.count))
                    ahead -= chunks[hashed].size
                    hashed += 1
                }
            }
            return whole
        }
        try await onDisk { try opened.file.synchronize() }
        return try ChunkHash(digest: hasher.finalize())
    }

    /// How many of `chunks`, from the first, end exactly `bytes` from the start; `nil` when none do.
    static func chunkCount(of chunks: [ChunkReference], endingAt bytes: Int64) -> Int? {
        var end: Int64 = 0
        for (index, chunk) in chunks.enumerated() {
            end += chunk.size
            if end == bytes { return index + 1 }
            if end > bytes { return nil }
        }
        return nil
    }

    /// The most chunks, and about the most bytes, one download request asks for.
    static let chunkBatchCount = 64
    static let chunkBatchBytes = 4 << 20
    /// How many download requests may be on their way at once: while one answer streams in, the next is asked for.
    static let chunkBatchConcurrency = 2
    /// About the most bytes, and the most chunks, one download asks for ahead of the first chunk it has not hashed
    /// yet: two full requests' worth, so both requests on their way can be full.
    static let downloadWindowBytes: Int64 = 2 * Int64(chunkBatchBytes)
    static let downloadWindowChunks = 2 * chunkBatchCount

    /// Sends the chunk downloads asked for at the same time as one request (``SyncService/downloadChunks(_:in:)``);
    /// a chunk the service lacks is refused alone.
    static func chunkBatcher(service: any SyncService, container: ContainerID) -> RequestBatcher<ChunkReference, Data> {
        RequestBatcher(
            maximumCount: chunkBatchCount, maximumBytes: chunkBatchBytes, concurrency: chunkBatchConcurrency,
            size: { Int($0.size) }
        ) {
            chunks in
            let found = try await service.downloadChunks(chunks, in: container)
            return chunks.map { chunk in
                found[chunk.hash].map { .success($0) }
                    ?? .failure(ProtocolError(.chunkNotFound, "the service has no chunk \(chunk.hash)"))
            }
        }
    }

    /// The bytes of one chunk: from a local file that has it (`local`, checked against its hash), else as the last
    /// feed page carried it (`held`) or from the service (in a request with the other operations' chunks asked for
    /// meanwhile); either checked when `checking`, and always of its length.
    private static func fetch(
        _ chunk: ChunkReference, requests: RequestBatcher<ChunkReference, Data>, held: HeldChunks,
        local: [LocalChunkLocation], folder: URL, disk: any LocalDisk, checking: Bool
    ) async throws -> Data {
        if let bytes = localCopy(of: chunk, at: local, folder: folder, disk: disk) { return bytes }
        let bytes: Data
        if let carried = held.bytes(of: chunk.hash) {
            bytes = carried
        } else {
            bytes = try await requests.submit(chunk)
        }
        guard Int64(bytes.count) == chunk.size,
            !checking || (try? ChunkHash(digest: SHA256.hash(data: bytes))) == chunk.hash
        else {
            throw ProtocolError(.chunkHashMismatch, "chunk \(chunk.hash) arrived with other bytes")
        }
        return bytes
    }

    /// The bytes of `chunk` from a local file that holds it (`locations`), checked against its hash.
    private static func localCopy(
        of chunk: ChunkReference, at locations: [LocalChunkLocation], folder: URL, disk: any LocalDisk
    ) -> Data? {
        for location in locations where Int64(location.size) == chunk.size {
            guard
                let file = try? disk.openFileForReading(
                    at: folder.appendingPathComponent(location.file, isDirectory: false))
            else {
                continue
            }
            if let bytes = file.read(at: location.offset, count: location.size),
                (try? ChunkHash(digest: SHA256.hash(data: bytes))) == chunk.hash
            {
                return bytes
            }
        }
        return nil
    }

    /// Whether the local copy is as it was when last in step (so replacing or removing it loses nothing), as far as
    /// its identity tells; what acts on it checks again inside its coordinated write (``checkLocalCopy``).
    func isUnmodified(_ item: LocalItem) throws -> Bool {
        guard let identity = item.identity else { return item.isPlaceholder }
        let url = layout.url(of: item.path)
        guard let now = try? scanner.identity(of: url, kind: item.kind) else { return !disk.exists(url) }
        return now.isUnchanged(since: identity)
    }
}

/// An open file handed to blocking work: used by one task at a time, the one that opened it.
private struct UncheckedFile: @unchecked Sendable {
    let file: any DiskFile
    init(_ file: any DiskFile) { self.file = file }
}
