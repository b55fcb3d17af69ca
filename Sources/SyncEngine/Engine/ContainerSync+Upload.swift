import Crypto
import DocumentKit
import Foundation
import NIOCore
import UbiquityProtocol

extension ContainerSync {
    /// What a read of a local copy found.
    struct ContentRead: Sendable {
        /// The content, chunked and hashed.
        var content: LocalContent
        /// The identity the copy had throughout the read.
        var identity: LocalFileIdentity
        /// When the read ended (nanoseconds since 1970): a hash proves the content of an identity only when read
        /// after ``LocalFileIdentity/racyInterval`` past its modification.
        var readAt: Int64
    }

    /// Chunks and hashes the file or package at `path` under a coordinated read; the identity is taken inside the
    /// same access, and a copy that changed while it was read is refused (``ContentChangedWhileRead``). A file's
    /// chunks are handed to `onChunk` as they are cut.
    func readContent(
        at path: ItemPath, kind: ItemKind,
        onChunk: (@Sendable (ChunkHash, LocalContent.Source) throws -> Void)? = nil
    ) async throws -> ContentRead {
        let url = layout.url(of: path)
        let (scanner, chunker, disk) = (scanner, configuration.chunker, disk)
        return try await onDisk {
            try FileCoordinator().coordinate(readingItemAt: url) { url in
                try disk.coordinationBegins()
                return try Self.read(
                    url, kind: kind, scanner: scanner, chunker: chunker, disk: disk, onChunk: onChunk)
            }
        }
    }

    /// Chunks and hashes the file or package at `url`, which the caller holds a coordinated read of (see
    /// ``readContent(at:kind:onChunk:)``).
    private static func read(
        _ url: URL, kind: ItemKind, scanner: LocalScanner, chunker: FileChunker, disk: any LocalDisk,
        onChunk: (@Sendable (ChunkHash, LocalContent.Source) throws -> Void)? = nil
    ) throws -> ContentRead {
        let before = try scanner.identity(of: url, kind: kind)
        let content =
            kind == .package
            ? try LocalContent(package: url, chunker: chunker, disk: disk)
            : try LocalContent(file: url, chunker: chunker, disk: disk, onChunk: onChunk)
        let after = try scanner.identity(of: url, kind: kind)
        guard after == before else { throw ContentChangedWhileRead() }
        return ContentRead(content: content, identity: before, readAt: after.capturedAt)
    }

    /// How many small files one coordinated read takes at most (``smallReads``).
    static let smallReadCount = 64

    /// The reads of small files that concurrent operations ask for (new files going up with their content), taken
    /// together: up to ``smallReadCount`` files under one coordinated read, sharing their folders' locks, each read
    /// and checked as ``readContent(at:kind:onChunk:)`` reads it alone and answered on its own. When the
    /// coordination itself fails (a writer holds one of them past the timeout), each is read again alone, so only
    /// its own read fails.
    static func smallReadBatcher(
        layout: ContainerLayout, scanner: LocalScanner, chunker: FileChunker, disk: any LocalDisk
    ) -> RequestBatcher<ItemPath, ContentRead> {
        .onDisk(count: smallReadCount, disk: disk) { paths in
            readTogether(paths.map { layout.url(of: $0) }, scanner: scanner, chunker: chunker, disk: disk)
        }
    }

    /// Reads the files at `urls` under one coordinated read, each as ``readContent(at:kind:onChunk:)`` reads it
    /// alone, with an outcome of its own; when the coordination itself fails, each is read again under a
    /// coordinated read of its own. Blocks.
    static func readTogether(
        _ urls: [URL], scanner: LocalScanner, chunker: FileChunker, disk: any LocalDisk
    ) -> [Result<ContentRead, any Error>] {
        let readAll = { () throws in
            try disk.coordinationBegins()
            return urls.map { url in
                Result { try read(url, kind: .file, scanner: scanner, chunker: chunker, disk: disk) }
            }
        }
        do {
            return try FileCoordinator().coordinate(
                with: urls.map { FileAccessIntent.readingIntent(with: $0) }, byAccessor: readAll)
        } catch is FileCoordinationError where urls.count > 1 {
            return urls.map { url in
                Result {
                    try FileCoordinator().coordinate(readingItemAt: url) { url in
                        try disk.coordinationBegins()
                        return try read(url, kind: .file, scanner: scanner, chunker: chunker, disk: disk)
                    }
                }
            }
        } catch {
            return urls.map { _ in .failure(error) }
        }
    }

    /// How many chunks move at once in one upload or download: enough to keep the connection and the service's
    /// disk busy while each chunk waits for its answer.
    static let transferWindow = 8

    /// The most bytes of chunks one upload request carries.
    static let batchBytes = 4 << 20

    /// Content up to this size is sent without first asking which of its chunks the service lacks: the question
    /// costs a round trip of its own, and sending bytes the service has already costs only the bytes (it keeps one
    /// copy of each chunk).
    static let unaskedBytes: Int64 = 64 << 10

    /// Uploads the chunks of `content` the service lacks (all of small content, ``unaskedBytes``) in batches of a few
    /// megabytes, a few batches at a time, reading each chunk from its file by its offset; the item's upload progress
    /// counts the chunks the service has as done. The question names only chunks that are not in `base`, a version
    /// the service keeps: a small edit of a large file asks about the chunks it changed.
    /// `sent` names chunks the service is known to have already (sent while the content was cut).
    func uploadChunks(
        of content: LocalContent, for item: LocalItem, base: VersionRecord? = nil, sent: Set<ChunkHash> = []
    ) async throws {
        let unknown = Self.unsent(content, base: base, sent: sent)
        let missing: [ChunkHash]
        if unknown.reduce(0, { $0 + $1.size }) <= Self.unaskedBytes {
            missing = unknown.map(\.hash)
        } else {
            missing = try await service.missingChunks(unknown, in: container)
        }
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
        let work = batches.filter { !$0.isEmpty }
        // Many large uploads at once would each hold a few batches of chunks in memory: a few go at a time.
        if pending > Self.smallUploadBytes {
            try await largeUploads.withSlot { try await send(work, of: item) }
        } else {
            let slots = Int((pending + Self.smallUploadSlotBytes - 1) / Self.smallUploadSlotBytes)
            try await smallUploadSlots.withSlots(slots) { try await send(work, of: item) }
        }
    }

    /// The chunks of `content` the service may lack, each once: those not in `base` (a version it keeps) nor among
    /// `sent`.
    private static func unsent(_ content: LocalContent, base: VersionRecord?, sent: Set<ChunkHash>) -> [ChunkReference]
    {
        let kept = Set(base?.manifest.chunks.map(\.hash) ?? []).union(sent)
        var seen = Set<ChunkHash>()
        return content.manifest.chunks.filter { !kept.contains($0.hash) && seen.insert($0.hash).inserted }
    }

    /// Makes the request `send` (a creation or commit naming `content`) with the chunks of `content` the service may
    /// lack: carried in the request itself when they are few bytes (``Configuration/inlineUploadBytes``), so small
    /// content costs one request and one transaction, not an upload and then a commit; uploaded first otherwise
    /// (``uploadChunks(of:for:base:sent:)``), and the request sent with none.
    /// - Throws: ``ContentChangedWhileRead`` when a chunk's file no longer holds its bytes (the service refused them,
    ///   or the file is gone or shorter).
    func sendWithChunks(
        of content: LocalContent, for item: LocalItem, base: VersionRecord? = nil, sent: Set<ChunkHash> = [],
        _ send: ([InlineChunk]) async throws -> ItemResponse
    ) async throws -> ItemResponse {
        let unknown = Self.unsent(content, base: base, sent: sent)
        let bytes = unknown.reduce(Int64(0)) { $0 + $1.size }
        guard bytes <= max(0, configuration.inlineUploadBytes) else {
            try await uploadChunks(of: content, for: item, base: base, sent: sent)
            return try await send([])
        }
        // Held while the bytes are, as a small upload's are.
        let slots = Int((bytes + Self.smallUploadSlotBytes - 1) / Self.smallUploadSlotBytes)
        return try await smallUploadSlots.withSlots(slots) {
            let chunks = try await Self.read(unknown, of: content, disk: disk)
            do {
                return try await send(chunks)
            } catch let error as ProtocolError where error.code == .chunkHashMismatch {
                throw ContentChangedWhileRead()
            } catch let error as ProtocolError where error.code == .chunksMissing && !chunks.isEmpty {
                // A service that does not read the chunks a request brings (an older node), or one whose copy of a
                // chunk it had went meanwhile: they go up on their own, then the request again.
                try await uploadChunks(of: content, for: item, base: base, sent: sent)
                return try await send([])
            }
        }
    }

    /// Reads `chunks` of `content` from their files, off the engine's actor, each checked against its hash.
    /// - Throws: ``ContentChangedWhileRead`` when a file is gone or shorter, or no longer holds a chunk's bytes (saved
    ///   over since it was chunked).
    private nonisolated static func read(
        _ chunks: [ChunkReference], of content: LocalContent, disk: any LocalDisk
    ) async throws -> [InlineChunk] {
        var opened: (url: URL, file: any DiskFile)?
        return try chunks.map { chunk in
            guard let source = content.sources[chunk.hash] else { throw ContentChangedWhileRead() }
            if opened?.url != source.file {
                opened = (try? disk.openFileForReading(at: source.file)).map { (source.file, $0) }
            }
            guard let file = opened?.file, let bytes = file.read(at: source.offset, count: Int(source.size)),
                (try? ChunkHash(digest: SHA256.hash(data: bytes))) == chunk.hash
            else { throw ContentChangedWhileRead() }
            return InlineChunk(hash: chunk.hash, data: bytes)
        }
    }

    /// Reads the file at `path` (the first version of an item, about `size` bytes) as ``readContent(at:kind:)``
    /// does, and uploads its chunks meanwhile: each few megabytes of chunks cut are asked about and the missing ones
    /// sent, a few batches at a time, read again by their offsets (so the coordinated read is never held for a
    /// transfer). A file changed meanwhile fails the read or the service's check of a chunk's hash, as an upload after
    /// the read would.
    /// - Returns: The read, and the chunks the service has now.
    func readUploading(at path: ItemPath, size: Int64, for item: LocalItem, version: VersionID) async throws
        -> (read: ContentRead, sent: Set<ChunkHash>)
    {
        let (chunks, feed) = AsyncStream.makeStream(of: (ChunkHash, LocalContent.Source).self)
        setTransfer(ItemTransfer(direction: .upload, completed: 0, total: size), of: item)
        defer { setTransfer(nil, of: item) }
        // Set when the sending failed: the read stops at its next chunk rather than cut the rest for nothing.
        let abandoned = Flag()
        let sender = Task(executorPreference: configuration.taskExecutor) { [self] in
            do {
                return try await largeUploads.withSlot {
                    try await sendWhileCut(chunks, of: item, version: version, size: size)
                }
            } catch {
                abandoned.set()
                throw error
            }
        }
        return try await withTaskCancellationHandler {
            let read: ContentRead
            do {
                read = try await readContent(at: path, kind: .file) { hash, source in
                    if abandoned.isSet { throw CancellationError() }
                    feed.yield((hash, source))
                }
            } catch {
                // A failed read stops the sending (the batches on their way are not waited for); a read stopped by
                // the sending's failure reports that failure.
                let stoppedBySending = abandoned.isSet
                feed.finish()
                sender.cancel()
                if case .failure(let failure) = await sender.result, stoppedBySending { throw failure }
                throw error
            }
            feed.finish()
            return (read, try await sender.value)
        } onCancel: {
            sender.cancel()
        }
    }

    /// Sends the chunks `chunks` brings as they come, a batch of up to ``batchBytes`` at a time (its missing chunks
    /// asked for first), a few batches at once. As the chunks the service has grow into a longer run from the
    /// content's start, they are told to the service as the draft of `version` (``DraftAppendRequest``), so that
    /// the devices that will download it can fetch them before the commit; a draft refused ends the drafting, not
    /// the upload.
    /// - Returns: The chunks the service has now.
    private func sendWhileCut(
        _ chunks: AsyncStream<(ChunkHash, LocalContent.Source)>, of item: LocalItem, version: VersionID, size: Int64
    ) async throws -> Set<ChunkHash> {
        let (service, container, disk, smallUploads) = (service, container, disk, smallUploads)
        let window = max(1, Self.transferWindow / 2)
        return try await withThrowingTaskGroup(of: (Int64, [ChunkHash]).self) { group in
            var sent = Set<ChunkHash>()
            var running = 0
            var batch: [(ChunkHash, LocalContent.Source)] = []
            var filled: Int64 = 0
            var seen = Set<ChunkHash>()
            // Every chunk in the content's order (repeats too), and how many of them were handed to the draft's
            // sender: one request at a time, in order, beside the uploads (a refused one ends the drafting).
            var order: [ChunkReference] = []
            var drafted = 0
            let (drafts, drafter) = AsyncStream.makeStream(of: DraftAppendRequest.self)
            let itemID = item.id
            let drafting = Task(executorPreference: configuration.taskExecutor) {
                for await request in drafts {
                    guard (try? await service.appendDraft(request, to: version, of: itemID, in: container)) != nil
                    else { return }
                }
            }
            defer {
                drafter.finish()
                drafting.cancel()
            }
            func answered(_ bytes: Int64, _ hashes: [ChunkHash]) {
                sent.formUnion(hashes)
                advanceTransfer(of: item, by: bytes)
                while true {
                    var held = drafted
                    while held < order.count, held - drafted < DraftPage.pageLimit, sent.contains(order[held].hash) {
                        held += 1
                    }
                    guard held > drafted else { return }
                    drafter.yield(
                        DraftAppendRequest(from: drafted, chunks: Array(order[drafted..<held]), total: size))
                    drafted = held
                }
            }
            func start() async throws {
                let work = batch
                batch = []
                filled = 0
                while running >= window, let (bytes, hashes) = try await group.next() {
                    running -= 1
                    answered(bytes, hashes)
                }
                running += 1
                group.addTask {
                    let missing = Set(
                        try await service.missingChunks(
                            work.map { ChunkReference(hash: $0.0, size: $0.1.size) }, in: container))
                    let total = work.reduce(Int64(0)) { $0 + $1.1.size }
                    let sending = work.filter { missing.contains($0.0) }
                    if !sending.isEmpty {
                        _ = try await Self.upload(
                            sending, service: service, container: container, disk: disk, smallUploads: smallUploads)
                    }
                    return (total, work.map(\.0))
                }
            }
            for await (hash, source) in chunks {
                order.append(ChunkReference(hash: hash, size: source.size))
                guard seen.insert(hash).inserted else { continue }
                if filled + source.size > Self.batchBytes, !batch.isEmpty { try await start() }
                batch.append((hash, source))
                filled += source.size
            }
            if !batch.isEmpty { try await start() }
            while let (bytes, hashes) = try await group.next() { answered(bytes, hashes) }
            return sent
        }
    }

    /// Sends `work` (batches of chunks and where to read them) for `item`, a few batches at a time, counting each
    /// into the item's upload progress as it is answered.
    private func send(_ work: [[(ChunkHash, LocalContent.Source)]], of item: LocalItem) async throws {
        let (service, container, disk, smallUploads) = (service, container, disk, smallUploads)
        let window = max(1, Self.transferWindow / 2)
        try await withThrowingTaskGroup(of: Int64.self) { group in
            var next = 0
            var running = 0
            while next < work.count || running > 0 {
                if next < work.count, running < window {
                    let batch = work[next]
                    next += 1
                    running += 1
                    group.addTask {
                        try await Self.upload(
                            batch, service: service, container: container, disk: disk, smallUploads: smallUploads)
                    }
                } else if let done = try await group.next() {
                    running -= 1
                    advanceTransfer(of: item, by: done)
                }
            }
        }
    }

    /// Reads a batch of chunks from their files and uploads them in one request: a small batch (a small file's) in
    /// one request with the other operations' small batches sent meanwhile (``smallUploads``).
    /// - Returns: Their length in all.
    private static func upload(
        _ batch: [(ChunkHash, LocalContent.Source)], service: any SyncService, container: ContainerID,
        disk: any LocalDisk, smallUploads: RequestBatcher<[UploadChunk], Void>
    ) async throws -> Int64 {
        var chunks: [(hash: ChunkHash, bytes: ByteBuffer)] = []
        var total: Int64 = 0
        // The file may have been saved over since it was chunked: a file gone or shorter, or bytes the service finds
        // other than their hash (it checks every chunk, so the engine does not hash them twice), mean the content is
        // read again.
        // A batch's chunks mostly come from one file: it is opened once for them, not once a chunk.
        var opened: (url: URL, file: any DiskFile)?
        for (hash, source) in batch {
            if opened?.url != source.file {
                opened = (try? disk.openFileForReading(at: source.file)).map { (source.file, $0) }
            }
            guard let file = opened?.file, let bytes = file.read(at: source.offset, count: Int(source.size))
            else { throw ContentChangedWhileRead() }
            chunks.append((hash, ByteBuffer(bytes: bytes)))
            total += source.size
        }
        do {
            if total <= smallUploadBytes {
                try await smallUploads.submit(chunks)
            } else {
                try await service.uploadChunks(chunks, in: container)
            }
        } catch let error as ProtocolError where error.code == .chunkHashMismatch {
            throw ContentChangedWhileRead()
        }
        return total
    }

    /// One chunk going up: its hash and bytes.
    typealias UploadChunk = (hash: ChunkHash, bytes: ByteBuffer)

    /// Batches of chunks up to this many bytes go up together with other operations' (many small files saved at
    /// once cost a request for many, not one each); larger ones go on their own, several at once.
    static let smallUploadBytes: Int64 = 256 << 10

    /// About the most bytes the small uploads under way hold at once, read and waiting for their batch: many small
    /// files go up in few requests (a few thousand of 4 KiB fit), and as many of 256 KiB as a request carries.
    static let smallUploadMemory: Int64 = 16 << 20
    /// The bytes one of ``smallUploadSlots`` stands for.
    static let smallUploadSlotBytes: Int64 = 4 << 10

    /// How many uploads larger than ``smallUploadBytes`` read and send their chunks at once.
    static let largeUploadCount = 8

    /// The small chunk uploads of concurrent operations, sent to `service` as one request. A request refused (a
    /// chunk whose bytes are not its hash's, a quota) is sent again an operation at a time, so each operation hears
    /// of its own refusal and no other.
    static func uploadBatcher(service: any SyncService, container: ContainerID) -> RequestBatcher<[UploadChunk], Void> {
        uploadBatcher { try await service.uploadChunks($0, in: container) }
    }

    /// ``uploadBatcher(service:container:)`` sending each request with `upload`.
    static func uploadBatcher(
        upload: @escaping @Sendable ([UploadChunk]) async throws -> Void
    ) -> RequestBatcher<[UploadChunk], Void> {
        RequestBatcher(
            maximumCount: chunkBatchCount, maximumBytes: chunkBatchBytes,
            size: { $0.reduce(0) { $0 + $1.bytes.readableBytes } }
        ) { operations in
            var seen = Set<ChunkHash>()
            do {
                try await upload(operations.joined().filter { seen.insert($0.hash).inserted })
                return operations.map { _ in .success(()) }
            } catch is ProtocolError where operations.count > 1 {
                var results: [Result<Void, any Error>] = []
                for operation in operations {
                    do {
                        try await upload(operation)
                        results.append(.success(()))
                    } catch {
                        results.append(.failure(error))
                    }
                }
                return results
            }
        }
    }

    /// An item changed between the identity taken before reading it and the one after.
    struct ContentChangedWhileRead: Error {}

    func makeVersion(
        of id: ItemID, _ content: LocalContent, _ identity: LocalFileIdentity, basedOn: VersionID?,
        named versionID: VersionID? = nil
    ) -> VersionRecord {
        // The date as the service keeps it (to the microsecond): a commit's answer may leave the version out, and
        // this record then stands for it.
        VersionRecord(
            id: versionID ?? VersionID(uuid: newIdentifier()), itemID: id, manifest: content.manifest,
            contentHash: content.contentHash,
            modificationDate: WireTimestamp.date(
                microseconds: WireTimestamp.microseconds(
                    of: Date(timeIntervalSince1970: Double(identity.modified) / 1e9))),
            savingDevice: device,
            basedOn: basedOn)
    }
}
