import Foundation
import UbiquityProtocol

/// A draft's chunks being fetched ahead of its version's commit.
struct DraftPrefetch {
    let task: Task<Void, Never>
    /// The draft's length as push last told it.
    let counts: AsyncStream<Int>.Continuation
}

extension ContainerSync {
    /// Told by push that the draft of `version` of `item` (a large file's first version, uploaded while it is cut)
    /// holds `count` chunks: the chunks are fetched ahead of the commit, in order, into the partial file the
    /// version's download resumes, while the draft stays within what this device downloads as soon as it hears of
    /// an item (``Configuration/eagerDownloadLimit``). A hint: nothing is recorded, and the download checks every
    /// byte as it always does.
    func draftGrew(_ item: ItemID, version: VersionID, count: Int) {
        let name = Self.partialName(of: item, version: version, purpose: "download")
        guard downloads[name] == nil else { return }
        if let running = prefetches[name] {
            running.counts.yield(count)
            return
        }
        // Only for a file this device knows of and does not write itself.
        guard let known = try? state.record(item), known.item.kind == .file, known.observation.local == nil else {
            return
        }
        let (counts, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
        continuation.yield(count)
        let url = layout.temporary.appendingPathComponent(name)
        let (service, container, requests, disk, limit) = (
            service, container, chunkRequests, disk, configuration.eagerDownloadLimit
        )
        let task = Task<Void, Never>(executorPreference: configuration.taskExecutor) {
            // A failed fetch leaves what it wrote for the download to resume; the rest comes with the download.
            _ = try? await Self.prefetch(
                version, of: item, into: url, counts: counts, service: service, container: container,
                requests: requests, disk: disk, limit: limit)
        }
        prefetches[name] = DraftPrefetch(task: task, counts: continuation)
    }

    /// Stops the fetch of a draft into the partial file `name` and waits for it to end.
    func stopPrefetch(named name: String) async {
        guard let running = prefetches.removeValue(forKey: name) else { return }
        running.counts.finish()
        running.task.cancel()
        await running.task.value
    }

    /// Stops every draft's fetch.
    func stopPrefetches() async {
        for name in Array(prefetches.keys) { await stopPrefetch(named: name) }
    }

    /// The name of the partial file in `.ubiquity/tmp/` that a download of `version` of `item` fills and resumes.
    static func partialName(of item: ItemID, version: VersionID, purpose: String) -> String {
        "\(item.string).\(version.string).\(purpose)\(partialSuffix)"
    }

    /// Fetches the draft's chunks into `url` in order, a page and a few requests at a time, as long as push tells of
    /// more, the draft lasts and its bytes stay within `limit`; stops when cancelled.
    private static func prefetch(
        _ version: VersionID, of item: ItemID, into url: URL, counts: AsyncStream<Int>, service: any SyncService,
        container: ContainerID, requests: RequestBatcher<ChunkReference, Data>, disk: any LocalDisk, limit: Int64
    ) async throws {
        let file = try disk.openFile(at: url)
        try file.truncate(to: 0)
        var have = 0
        var offset: Int64 = 0
        for await count in counts {
            while have < count {
                try Task.checkCancellation()
                guard let page = try await service.draft(of: version, of: item, from: have, in: container),
                    !page.chunks.isEmpty
                else { return }
                for start in stride(from: 0, to: page.chunks.count, by: prefetchGroup) {
                    let group = Array(page.chunks[start..<min(page.chunks.count, start + prefetchGroup)])
                    let size = group.reduce(Int64(0)) { $0 + $1.size }
                    guard offset + size <= limit else { return }
                    let fetched = try await withThrowingTaskGroup(of: (Int, Data).self) { tasks in
                        for (index, chunk) in group.enumerated() {
                            tasks.addTask { (index, try await requests.submit(chunk)) }
                        }
                        var fetched = [Data?](repeating: nil, count: group.count)
                        for try await (index, bytes) in tasks { fetched[index] = bytes }
                        return fetched
                    }
                    try Task.checkCancellation()
                    for (chunk, bytes) in zip(group, fetched) {
                        guard let bytes, Int64(bytes.count) == chunk.size else { return }
                        try file.write(bytes, at: offset)
                        offset += chunk.size
                        have += 1
                    }
                }
            }
        }
    }

    /// How many of a draft's chunks are asked for at once (the downloads' batcher groups them into requests).
    static let prefetchGroup = 64
}
