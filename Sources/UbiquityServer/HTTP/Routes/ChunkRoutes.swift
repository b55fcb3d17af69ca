import Hummingbird
import NIOCore
import UbiquityProtocol

extension RouteEnvironment {
    /// `POST …/chunks/missing`, `PUT …/chunks/{hash}`, `GET …/chunks/{hash}`.
    func addChunkRoutes(to router: some RouterMethods<ServerRequestContext>) {
        router.post("containers/{container}/chunks/missing") { request, context -> Response in
            let container = try context.container()
            let body = try await decode(MissingChunksRequest.self, from: request)
            guard body.chunks.count <= configuration.limits.chunksPerRequest else {
                throw ProtocolError(
                    .bodyTooLarge, "at most \(configuration.limits.chunksPerRequest) chunks may be asked about at once")
            }
            let limit = configuration.limits.chunkBytes
            if let bad = body.chunks.first(where: { !(0...Int64(limit)).contains($0.size) }) {
                throw ProtocolError(
                    .malformedRequest, "chunk \(bad.hash) has size \(bad.size); a chunk is 0 to \(limit) bytes")
            }
            let missing = try await store.missingChunks(body.chunks.map(\.hash), of: container.account)
            let missingSet = Set(missing)
            var sizes: [ChunkHash: Int64] = [:]
            for chunk in body.chunks where missingSet.contains(chunk.hash) { sizes[chunk.hash] = chunk.size }
            let total = sizes.values.reduce(Int64(0)) { sum, size in
                let (next, overflow) = sum.addingReportingOverflow(size)
                return overflow ? .max : next
            }
            try await checkQuota(adding: total, for: container.account)
            return try json(MissingChunksResponse(missing: missing))
        }
        router.put("containers/{container}/chunks/{hash}") { request, context -> Response in
            let container = try context.container()
            let hash = try ChunkHash(try context.parameters.require("hash"))
            let limit = configuration.limits.chunkBytes
            let declared = request.headers[.contentLength].flatMap { Int64($0) }
            if let declared, declared > limit {
                throw ProtocolError(.bodyTooLarge, "a chunk is at most \(limit) bytes; this one is \(declared)")
            }
            if try await store.chunkSize(hash, of: container.account) != nil {
                return Response(status: .ok)
            }
            let account = container.account
            let upload = try await chunks.beginUpload(for: account)
            let added: Bool
            do {
                // The quota is held from before the bytes are read until the chunk is recorded.
                added = try await withQuota(reserving: declared ?? 0, for: account) {
                    for try await buffer in request.body {
                        metrics.uploadBytes.increment(by: Int64(buffer.readableBytes))
                        guard upload.byteCount + Int64(buffer.readableBytes) <= limit else {
                            throw ProtocolError(.bodyTooLarge, "a chunk is at most \(limit) bytes")
                        }
                        try buffer.withUnsafeReadableBytes { try upload.write($0) }
                    }
                    return try await withQuota(reserving: declared == nil ? upload.byteCount : 0, for: account) {
                        try await upload.finish(expecting: hash)
                        let added = try await store.addChunk(
                            ChunkReference(hash: hash, size: upload.byteCount), to: account)
                        // Counted once a chunk: two uploads of one chunk racing (a killed engine's request still
                        // under way and its successor's) store it twice but add it once.
                        if added {
                            metrics.bytesIn.increment(by: upload.byteCount)
                            metrics.chunksIn.increment()
                        }
                        return added
                    }
                }
            } catch {
                upload.cancel()
                throw error
            }
            return Response(status: added ? .created : .ok)
        }
        router.post("containers/{container}/chunks") { request, context -> Response in
            let container = try context.container()
            let limit = configuration.limits.chunkBatchBytes
            let declared = request.headers[.contentLength].flatMap { Int64($0) }
            if let declared, declared > limit {
                throw ProtocolError(
                    .bodyTooLarge, "a batch of chunks is at most \(limit) bytes; this one is \(declared)")
            }
            let received = try await withQuota(reserving: declared ?? 0, for: container.account) {
                try await receiveBatch(request.body, for: container.account)
            }
            return try json(ChunkBatchResponse(received: received))
        }
        router.post("containers/{container}/chunks/fetch") { request, context -> Response in
            let container = try context.container()
            let body = try await decode(ChunkFetchRequest.self, from: request)
            try body.validate()
            let sizes = try await store.chunkSizes(body.hashes, of: container.account)
            var seen = Set<ChunkHash>()
            var found: [(hash: ChunkHash, size: Int64)] = []
            for hash in body.hashes where seen.insert(hash).inserted {
                // Left out unless it is both recorded and on disk, as a single download answers it not found.
                guard let size = sizes[hash], try await chunks.contains(hash, of: container.account) else { continue }
                found.append((hash, size))
            }
            let (metrics, chunks, account, sending) = (metrics, chunks, container.account, found)
            let length = found.reduce(0) { $0 + ChunkBatch.headerBytes + Int($1.size) }
            // Each chunk's file is opened when its turn comes: a request for many chunks holds one open at a time.
            return Response(
                status: .ok, headers: [.contentType: ChunkBatch.contentType],
                body: ResponseBody(contentLength: length) { writer in
                    for (hash, size) in sending {
                        guard let reader = try await chunks.read(hash, of: account, pieceSize: 256 << 10),
                            reader.size == size
                        else { throw ProtocolError(.chunkNotFound, "chunk \(hash) went while it was being sent") }
                        try await writer.write(ByteBuffer(bytes: ChunkBatch.header(hash, size: Int(size))))
                        for try await piece in reader {
                            try await writer.write(ByteBuffer(bytes: piece))
                            metrics.bytesOut.increment(by: Int64(piece.count))
                        }
                    }
                    try await writer.finish(nil)
                })
        }
        router.get("containers/{container}/chunks/{hash}") { _, context -> Response in
            let container = try context.container()
            let hash = try ChunkHash(try context.parameters.require("hash"))
            guard try await store.chunkSize(hash, of: container.account) != nil,
                let reader = try await chunks.read(hash, of: container.account, pieceSize: 256 << 10)
            else { throw ProtocolError(.chunkNotFound, "the account has no chunk \(hash)") }
            let metrics = metrics
            return Response(
                status: .ok, headers: [.contentType: "application/octet-stream"],
                body: ResponseBody(contentLength: Int(reader.size)) { writer in
                    for try await piece in reader {
                        try await writer.write(ByteBuffer(bytes: piece))
                        metrics.bytesOut.increment(by: Int64(piece.count))
                    }
                    try await writer.finish(nil)
                })
        }
    }

    /// Reads a ``ChunkBatch`` body as it streams in, each chunk into an upload of its own (a chunk the account has
    /// is read past), then stores them all together.
    /// - Returns: How many chunks the body held.
    private func receiveBatch(_ body: RequestBody, for account: AccountID) async throws -> Int {
        let chunkLimit = configuration.limits.chunkBytes
        let batchLimit = configuration.limits.chunkBatchBytes
        var uploads: [(upload: any ChunkUpload, hash: ChunkHash)] = []
        var header: [UInt8] = []
        var current: (upload: (any ChunkUpload)?, hash: ChunkHash, remaining: Int)?
        var count = 0
        var total = 0
        // Every byte that arrived counts, whatever becomes of the request.
        defer { metrics.uploadBytes.increment(by: Int64(total)) }
        do {
            for try await var buffer in body {
                total += buffer.readableBytes
                guard total <= batchLimit else {
                    throw ProtocolError(.bodyTooLarge, "a batch of chunks is at most \(batchLimit) bytes")
                }
                while buffer.readableBytes > 0 {
                    if var chunk = current {
                        let take = min(chunk.remaining, buffer.readableBytes)
                        if let upload = chunk.upload {
                            try buffer.readSlice(length: take)!.withUnsafeReadableBytes { try upload.write($0) }
                        } else {
                            buffer.moveReaderIndex(forwardBy: take)
                        }
                        chunk.remaining -= take
                        current = chunk.remaining == 0 ? nil : chunk
                        if chunk.remaining == 0, let upload = chunk.upload { uploads.append((upload, chunk.hash)) }
                        continue
                    }
                    let take = min(ChunkBatch.headerBytes - header.count, buffer.readableBytes)
                    header += buffer.readBytes(length: take)!
                    guard header.count == ChunkBatch.headerBytes else { continue }
                    let (hash, size) = try ChunkBatch.parseHeader(header)
                    header = []
                    count += 1
                    guard size <= chunkLimit else {
                        throw ProtocolError(.bodyTooLarge, "a chunk is at most \(chunkLimit) bytes; \(hash) is \(size)")
                    }
                    let known = try await store.chunkSize(hash, of: account) != nil
                    let upload = known ? nil : try await chunks.beginUpload(for: account)
                    if size == 0 {
                        if let upload { uploads.append((upload, hash)) }
                    } else {
                        current = (upload, hash, size)
                    }
                }
            }
            guard current == nil, header.isEmpty else {
                throw ProtocolError(.malformedRequest, "the batch ends inside a chunk")
            }
            try await chunks.finish(uploads)
        } catch {
            for (upload, _) in uploads { upload.cancel() }
            current?.upload?.cancel()
            throw error
        }
        // Recorded together, in one transaction; a chunk the quota has no room for refuses the request, and the
        // others, which fit, stay recorded.
        let outcomes = try await store.addChunks(
            uploads.map { ChunkReference(hash: $0.hash, size: $0.upload.byteCount) }, to: account)
        for ((upload, _), outcome) in zip(uploads, outcomes) where outcome == .added {
            metrics.bytesIn.increment(by: upload.byteCount)
            metrics.chunksIn.increment()
        }
        for case .refused(let error) in outcomes { throw error }
        return count
    }

    /// Refuses, before anything is accepted, `bytes` more that would take the account over its quota (with what
    /// uploads under way hold).
    func checkQuota(adding bytes: Int64, for account: AccountID) async throws {
        guard bytes > 0, let record = try await store.account(id: account), let quota = record.quotaBytes else {
            return
        }
        let (used, overflow) = record.usedBytes.addingReportingOverflow(self.quota.reserved(for: account))
        let (total, more) = used.addingReportingOverflow(bytes)
        guard !overflow, !more, total <= quota else { throw Self.overQuota(bytes, quota) }
    }

    /// Runs `body` (an upload) holding `bytes` of the account's quota, refused before it starts when they do not fit
    /// beside the used bytes and what other uploads under way hold (``QuotaReservations``).
    func withQuota<T>(reserving bytes: Int64, for account: AccountID, _ body: () async throws -> T) async throws -> T {
        guard bytes > 0 else { return try await body() }
        let ended = quota.ended(for: account)
        guard let record = try await store.account(id: account), let limit = record.quotaBytes else {
            return try await body()
        }
        guard quota.reserve(bytes, for: account, used: record.usedBytes, quota: limit, readAfter: ended) else {
            throw Self.overQuota(bytes, limit)
        }
        defer { quota.release(bytes, of: account) }
        return try await body()
    }

    private static func overQuota(_ bytes: Int64, _ quota: Int64) -> ProtocolError {
        ProtocolError(
            .quotaExceeded,
            "storing \(bytes) more bytes would take the account over its \(quota)-byte quota; nothing was accepted")
    }
}
