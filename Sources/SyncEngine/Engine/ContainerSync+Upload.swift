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
    /// same access, and a copy that changed while it was read is refused (``ContentChangedWhileRead``).
    func readContent(at path: ItemPath, kind: ItemKind) async throws -> ContentRead {
        let url = layout.url(of: path)
        let (scanner, chunker, disk) = (scanner, configuration.chunker, disk)
        return try await onDisk {
            try FileCoordinator().coordinate(readingItemAt: url) { url in
                let before = try scanner.identity(of: url, kind: kind)
                let content =
                    kind == .package
                    ? try LocalContent(package: url, chunker: chunker, disk: disk)
                    : try LocalContent(file: url, chunker: chunker, disk: disk)
                let after = try scanner.identity(of: url, kind: kind)
                guard after == before else { throw ContentChangedWhileRead() }
                return ContentRead(content: content, identity: before, readAt: after.capturedAt)
            }
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
    func uploadChunks(of content: LocalContent, for item: LocalItem, base: VersionRecord? = nil) async throws {
        let kept = Set(base?.manifest.chunks.map(\.hash) ?? [])
        var seen = Set<ChunkHash>()
        let unknown = content.manifest.chunks.filter { !kept.contains($0.hash) && seen.insert($0.hash).inserted }
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
        let (service, container, disk) = (service, container, disk)
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
                    group.addTask { try await Self.upload(batch, service: service, container: container, disk: disk) }
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
        _ batch: [(ChunkHash, LocalContent.Source)], service: any SyncService, container: ContainerID,
        disk: any LocalDisk
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
            try await service.uploadChunks(chunks, in: container)
        } catch let error as ProtocolError where error.code == .chunkHashMismatch {
            throw ContentChangedWhileRead()
        }
        return total
    }

    /// An item changed between the identity taken before reading it and the one after.
    struct ContentChangedWhileRead: Error {}

    func makeVersion(
        of id: ItemID, _ content: LocalContent, _ identity: LocalFileIdentity, basedOn: VersionID?
    ) -> VersionRecord {
        // The date as the service keeps it (to the microsecond): a commit's answer may leave the version out, and
        // this record then stands for it.
        VersionRecord(
            id: VersionID(uuid: newIdentifier()), itemID: id, manifest: content.manifest,
            contentHash: content.contentHash,
            modificationDate: WireTimestamp.date(
                microseconds: WireTimestamp.microseconds(
                    of: Date(timeIntervalSince1970: Double(identity.modified) / 1e9))),
            savingDevice: device,
            basedOn: basedOn)
    }
}
