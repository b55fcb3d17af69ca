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
            try await checkQuota(adding: declared ?? 0, for: container.account)
            let upload = try await chunks.beginUpload(for: container.account)
            do {
                for try await buffer in request.body {
                    guard upload.byteCount + Int64(buffer.readableBytes) <= limit else {
                        throw ProtocolError(.bodyTooLarge, "a chunk is at most \(limit) bytes")
                    }
                    try buffer.withUnsafeReadableBytes { try upload.write($0) }
                }
                if declared == nil { try await checkQuota(adding: upload.byteCount, for: container.account) }
                try await upload.finish(expecting: hash)
            } catch {
                upload.cancel()
                throw error
            }
            metrics.bytesIn.increment(by: upload.byteCount)
            metrics.chunksIn.increment()
            let added = try await store.addChunk(
                ChunkReference(hash: hash, size: upload.byteCount), to: container.account)
            return Response(status: added ? .created : .ok)
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

    /// Refuses, before anything is accepted, `bytes` more that would take the account over its quota.
    func checkQuota(adding bytes: Int64, for account: AccountID) async throws {
        guard bytes > 0, let record = try await store.account(id: account), let quota = record.quotaBytes else {
            return
        }
        let (total, overflow) = record.usedBytes.addingReportingOverflow(bytes)
        guard !overflow, total <= quota else {
            throw ProtocolError(
                .quotaExceeded,
                "storing \(bytes) more bytes would take the account over its "
                    + "\(quota)-byte quota; nothing was accepted")
        }
    }
}
