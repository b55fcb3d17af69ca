import Crypto
import Foundation
import UbiquityProtocol

/// How far a draft's chunks were fetched into their partial file: the chunks and the bytes written in order from
/// its start, and the SHA-256 of those bytes so far (a download that takes them as they are need not read them again).
struct DraftProgress: @unchecked Sendable {
    var chunks = 0
    var bytes: Int64 = 0
    /// The bytes written, hashed in order as they were written. A value (copied on write), though its type does not
    /// say it is `Sendable`.
    var hasher = SHA256()

    /// Records `data`, written at the end of what was written so far.
    mutating func wrote(_ data: Data) {
        hasher.update(data: data)
        bytes += Int64(data.count)
        chunks += 1
    }
}

extension ContainerSync {
    /// Told by push (``ContainerEngine`` hands on ``PushMessage/draft(container:item:version:count:)``) that the
    /// draft of `version` of `item` (a large file's first version, uploaded while it is cut) holds `count` chunks:
    /// the chunks are fetched ahead of the commit, in order, into the partial file the version's download resumes,
    /// as long as the file is one this device downloads as soon as it hears of it (its size, as the draft tells it,
    /// within ``Configuration/eagerDownloadLimit``). A hint: nothing is recorded, and the download checks every
    /// byte as it always does.
    public func draftGrew(_ item: ItemID, version: VersionID, count: Int) {
        let name = Self.partialName(of: item, version: version, purpose: "download")
        guard count > 0, downloads[name] == nil else { return }
        if prefetching[name] != nil {
            draftCounts[name] = max(draftCounts[name] ?? 0, count)
            return
        }
        let progress = prefetched[name] ?? DraftProgress()
        guard progress.chunks < count else { return }
        // Only for a file this device knows of and does not write itself.
        guard let known = try? state.record(item), known.item.kind == .file, known.observation.local == nil else {
            return
        }
        draftCounts[name] = count
        prefetched[name] = nil
        let url = layout.temporary.appendingPathComponent(name, isDirectory: false)
        partialFiles?.insert(name)
        let (service, container, disk, limit) = (service, container, disk, configuration.eagerDownloadLimit)
        let path = known.item.path
        prefetching[name] = Task(executorPreference: configuration.taskExecutor) { [self] in
            var progress = progress
            // Told as the item's download: the content is on its way here, before its commit as after.
            let ending = await Self.prefetch(
                version, of: item, into: url, from: &progress, wanted: { await self.draftCounts[name] ?? 0 },
                service: service, container: container, disk: disk, limit: limit
            ) { done, total in
                self.reportTransfer(
                    ItemTransfer(direction: .download, completed: done, total: total), of: item, at: path)
            }
            await prefetchEnded(name, of: item, version: version, progress: progress, ending: ending)
            return progress
        }
    }

    /// Records how a draft's fetch that ended by itself left its partial file: kept, with how far it got, for the
    /// download to resume (or a later push to go on from); or removed (a file this device does not download at once).
    /// A push that came after the fetch last asked how far to go starts it again from there.
    private func prefetchEnded(
        _ name: String, of item: ItemID, version: VersionID, progress: DraftProgress, ending: PrefetchEnding
    ) {
        guard prefetching.removeValue(forKey: name) != nil else { return }  // stopped: the stopper takes the progress
        if downloads.isEmpty || !downloads.keys.contains(where: { $0.hasPrefix(item.string) }) {
            reportTransfer(nil, of: item, at: nil)
        }
        let told = draftCounts.removeValue(forKey: name) ?? 0
        guard ending != .tooLarge, progress.bytes > 0 else {
            removePartialFile(named: name)
            return
        }
        prefetched[name] = progress
        if ending == .caughtUp, told > progress.chunks { draftGrew(item, version: version, count: told) }
    }

    /// Why a draft's fetch ended by itself.
    enum PrefetchEnding {
        /// It had all push had told of when it last asked.
        case caughtUp
        /// The draft is gone (committed, replaced, forgotten), or a request failed.
        case draftEnded
        /// The file is larger than this device downloads at once.
        case tooLarge
    }

    /// Records and tells an item's transfer (as ``setTransfer(_:of:)``, from any task).
    nonisolated func reportTransfer(_ transfer: ItemTransfer?, of item: ItemID, at path: ItemPath?) {
        let path = path ?? (try? state.record(item))?.item.path
        transfers.withLock { $0[item] = transfer }
        if let path { hub.send(.progress(item, path, transfer)) }
    }

    /// Stops the fetch of a draft into the partial file `name`, waits for it to end, and forgets it.
    /// - Returns: What it wrote in order from the file's start (nothing when none ran): the prefix a download may
    ///   take as it is, with its hash so far, checked with the rest by the content's hash.
    @discardableResult
    func stopPrefetch(named name: String) async -> DraftProgress {
        draftCounts[name] = nil
        if let running = prefetching.removeValue(forKey: name) {
            running.cancel()
            return await running.value
        }
        return prefetched.removeValue(forKey: name) ?? DraftProgress()
    }

    /// Stops every draft's fetch.
    func stopPrefetches() async {
        for name in Array(prefetching.keys) { await stopPrefetch(named: name) }
    }

    /// Whether a draft's fetch is running into, or left, the partial file `name`.
    func isPrefetched(_ name: String) -> Bool { prefetching[name] != nil || prefetched[name] != nil }

    /// Removes the partial files of drafts fetched earlier that the service no longer has (committed as another
    /// version, replaced by another upload's, deleted with their item, or forgotten), unless the draft's version
    /// is the item's current one (its download resumes the file).
    func forgetAbandonedPrefetches() async throws {
        for (name, progress) in prefetched {
            let parts = name.split(separator: ".")
            guard parts.count >= 2, let item = try? ItemID(String(parts[0])),
                let version = try? VersionID(String(parts[1]))
            else { continue }
            if let record = try state.record(item), record.observation.remote?.version == version { continue }
            if try await service.draft(of: version, of: item, from: progress.chunks, in: container) != nil { continue }
            guard prefetched.removeValue(forKey: name) != nil else { continue }
            removePartialFile(named: name)
        }
    }

    /// The name of the partial file in `.ubiquity/tmp/` that a download of `version` of `item` fills and resumes.
    static func partialName(of item: ItemID, version: VersionID, purpose: String) -> String {
        "\(item.string).\(version.string).\(purpose)\(partialSuffix)"
    }

    /// Fetches the draft's chunks into `url` in order from `progress` on, until it has all `wanted` says (asked
    /// again as each page of the draft is used up), the draft ends, or the file's size as the draft tells it passes
    /// `limit`; stops when cancelled, keeping what it wrote. Up to ``prefetchConcurrency`` requests are on their way
    /// at once (the next is asked for while an answer streams in), their chunks written in order. Tells
    /// `progressed` the bytes written and the file's size (as the draft tells it) after each request.
    /// - Returns: Why it ended.
    private static func prefetch(
        _ version: VersionID, of item: ItemID, into url: URL, from progress: inout DraftProgress,
        wanted: () async -> Int, service: any SyncService, container: ContainerID, disk: any LocalDisk, limit: Int64,
        progressed: (_ done: Int64, _ total: Int64) -> Void
    ) async -> PrefetchEnding {
        do {
            let file = try disk.openFile(at: url)
            try file.truncate(to: progress.bytes)
            return try await withThrowingTaskGroup(of: (Int, [ChunkReference], [ChunkHash: Data]).self) { requests in
                defer { requests.cancelAll() }
                var known = progress.chunks  // the chunks from the draft's start written, asked for or queued
                var knownBytes = progress.bytes
                var total: Int64?
                var queued: [[ChunkReference]] = []  // a request's worth each, not asked for yet
                var ended = false
                var (started, written) = (0, 0)  // requests started, and written in order
                var arrived: [Int: ([ChunkReference], [ChunkHash: Data])] = [:]
                while true {
                    while started - written < prefetchConcurrency {
                        if queued.isEmpty {
                            guard !ended, known < (await wanted()) else { break }
                            try Task.checkCancellation()
                            guard
                                let page = try await service.draft(
                                    of: version, of: item, from: known, in: container),
                                !page.chunks.isEmpty
                            else {
                                ended = true
                                break
                            }
                            if let size = page.total, size > limit { return .tooLarge }
                            total = page.total ?? total
                            for start in stride(from: 0, to: page.chunks.count, by: prefetchGroup) {
                                let group = Array(page.chunks[start..<min(page.chunks.count, start + prefetchGroup)])
                                knownBytes += group.reduce(0) { $0 + $1.size }
                                guard knownBytes <= limit else { return .tooLarge }
                                queued.append(group)
                            }
                            known += page.chunks.count
                        }
                        let (number, group) = (started, queued.removeFirst())
                        started += 1
                        // Its own requests, not the downloads' shared ones: stopping it fails nothing else.
                        requests.addTask { (number, group, try await service.downloadChunks(group, in: container)) }
                    }
                    guard written < started, let (number, group, fetched) = try await requests.next() else { break }
                    arrived[number] = (group, fetched)
                    while let (group, fetched) = arrived.removeValue(forKey: written) {
                        try Task.checkCancellation()
                        for chunk in group {
                            guard let bytes = fetched[chunk.hash], Int64(bytes.count) == chunk.size else {
                                return .draftEnded
                            }
                            try file.write(bytes, at: progress.bytes)
                            progress.wrote(bytes)
                        }
                        written += 1
                        // Their writing to disk starts now, so the download's flush at the end finds little to do.
                        file.startWriting()
                        progressed(progress.bytes, max(total ?? 0, progress.bytes))
                    }
                }
                return ended ? .draftEnded : .caughtUp
            }
        } catch {
            // A fetch stopped or failed keeps what it wrote in order; the rest comes with the download.
            return .draftEnded
        }
    }

    /// How many requests a draft's fetch keeps on their way at once.
    static let prefetchConcurrency = 2

    /// How many of a draft's chunks one request asks for.
    static let prefetchGroup = 64
}
