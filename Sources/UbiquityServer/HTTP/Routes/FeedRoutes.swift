import Foundation
import Hummingbird
import UbiquityProtocol

extension RouteEnvironment {
    /// `GET …/changes` and the key-value routes `GET`/`POST …/kv`.
    func addFeedRoutes(to router: some RouterMethods<ServerRequestContext>) {
        router.get("containers/{container}/changes") { request, context -> Response in
            let container = try context.container()
            let query = request.uri.queryParameters
            let since = query["since"].map { ChangeToken(String($0)) }
            let pageLimit = configuration.limits.changesPerPage
            var limit = pageLimit
            if let text = query["limit"] {
                guard let value = Int(String(text)), value > 0 else {
                    throw ProtocolError(.malformedRequest, "limit must be a positive whole number")
                }
                limit = min(value, pageLimit)
            }
            var budget = 0
            if let text = query["chunkBytes"] {
                guard let value = Int(String(text)), value >= 0 else {
                    throw ProtocolError(.malformedRequest, "chunkBytes must be a whole number, 0 or more")
                }
                budget = min(value, ChangePage.maximumChunkBytes)
            }
            var page = try await store.changes(in: container, since: since, limit: limit)
            if budget > 0, !page.versions.isEmpty {
                let device = try context.requireIdentity().info.device.id
                page.chunks = try await chunks(of: page.versions, savedByOtherThan: device, upTo: budget, in: container)
            }
            return try json(page)
        }
        router.get("containers/{container}/kv") { request, context -> Response in
            let container = try context.container()
            let since = request.uri.queryParameters["since"].map { ChangeToken(String($0)) }
            return try json(try await store.keyValues(in: container, since: since))
        }
        router.post("containers/{container}/kv") { request, context -> Response in
            let container = try context.container()
            let identity = try context.requireIdentity()
            let batch = try await decode(KeyValueBatch.self, from: request)
            let response = try await store.applyKeyValues(
                batch.writes, from: identity.info.device.id, in: container, limits: configuration.keyValueLimits)
            if !response.changedKeys.isEmpty {
                hub.publish(.keyValueChanged(container: container.container, token: response.token), to: container)
                cluster?.announce(
                    .keyValueChanged(account: container.account, container: container.container, token: response.token))
            }
            return try json(response)
        }
    }

    /// The bytes of the chunks `versions` name, of those another device than `device` saved, each once, up to
    /// `budget` bytes in all; a version whose chunks do not all fit is left for the device to download.
    private func chunks(
        of versions: [VersionRecord], savedByOtherThan device: DeviceID, upTo budget: Int, in container: ContainerKey
    ) async throws -> [InlineChunk] {
        // Chosen by the sizes the versions name (a chunk is read only if it has that length), then read a few at
        // once: from an object store each read is a request of its own.
        let chosen = ChangePage.carriedChunks(of: versions, savedByOtherThan: device, upTo: budget)
        let (chunks, account) = (self.chunks, container.account)
        var read: [Int: Data] = [:]
        await withTaskGroup(of: (Int, Data?).self) { group in
            var next = 0
            func start() {
                let (index, chunk) = (next, chosen[next])
                next += 1
                group.addTask { (index, await Self.bytes(of: chunk, of: account, from: chunks)) }
            }
            while next < min(chosen.count, Self.feedChunkReads) { start() }
            for await (index, bytes) in group {
                read[index] = bytes
                if next < chosen.count { start() }
            }
        }
        var carried: [InlineChunk] = []
        for (index, chunk) in chosen.enumerated() {
            guard let bytes = read[index] ?? nil else { continue }
            carried.append(InlineChunk(hash: chunk.hash, data: bytes))
            metrics.bytesOut.increment(by: Int64(bytes.count))
        }
        return carried
    }

    /// How many chunks a feed page's reads fetch at once.
    private static let feedChunkReads = 8

    /// The bytes of `chunk`, or `nil`: carried only as a hint, a chunk gone since the page was read (its version
    /// removed), of another length than its version says, or that cannot be read now is left out, and the device
    /// downloads it (and hears why) as it would without.
    private static func bytes(of chunk: ChunkReference, of account: AccountID, from chunks: any ChunkStore) async
        -> Data?
    {
        do {
            guard let reader = try await chunks.read(chunk.hash, of: account, pieceSize: 256 << 10),
                reader.size == chunk.size
            else { return nil }
            var bytes = Data()
            for try await piece in reader { bytes.append(contentsOf: piece) }
            return bytes.count == chunk.size ? bytes : nil
        } catch {
            return nil
        }
    }
}
