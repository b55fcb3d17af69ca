import Crypto
import Foundation
import UbiquityProtocol

extension RouteEnvironment {
    /// Applies a batch that brought chunks with it (``ItemBatchRequest/chunks``). Only chunks an operation names are
    /// looked at; each is checked against its hash, and the new right ones that fit in the account's quota (beside
    /// what it uses and what uploads under way hold) are stored durably together, then recorded in the operations'
    /// transaction. An operation naming a chunk whose bytes were wrong is refused alone
    /// (``ProtocolError/Code/chunkHashMismatch``), and one naming a chunk the quota had no room for alone too
    /// (``ProtocolError/Code/quotaExceeded``; the chunk is not stored); the others apply as they would after a
    /// separate upload.
    func applyItemBatch(
        _ operations: [ItemBatchOperation], bringing inline: [InlineChunk], in container: ContainerKey
    ) async throws -> [Result<ItemResponse, ProtocolError>] {
        let account = container.account
        let chunkLimit = configuration.limits.chunkBytes
        let named = Set(operations.flatMap { $0.namedChunks.map(\.hash) })
        var refusing: [ChunkHash: ProtocolError] = [:]
        var right: [InlineChunk] = []
        var seen = Set<ChunkHash>()
        metrics.uploadBytes.increment(by: Int64(inline.reduce(0) { $0 + $1.data.count }))
        for chunk in inline where named.contains(chunk.hash) && seen.insert(chunk.hash).inserted {
            guard chunk.data.count <= chunkLimit else {
                throw ProtocolError(
                    .bodyTooLarge, "a chunk is at most \(chunkLimit) bytes; \(chunk.hash) is \(chunk.data.count)")
            }
            let actual = try ChunkHash(digest: SHA256.hash(data: chunk.data))
            if actual == chunk.hash {
                right.append(chunk)
            } else {
                refusing[chunk.hash] = ProtocolError(
                    .chunkHashMismatch, "the bytes sent as chunk \(chunk.hash) hash to \(actual); nothing was stored")
            }
        }
        var known: [ChunkHash: Int64] = [:]
        for start in stride(from: 0, to: right.count, by: 1_000) {
            let slice = right[start..<min(start + 1_000, right.count)]
            known.merge(try await store.chunkSizes(slice.map(\.hash), of: account)) { first, _ in first }
        }
        let (fitting, over) = try await fitQuota(right.filter { known[$0.hash] == nil }, for: account)
        refusing.merge(over) { first, _ in first }
        let bytes = fitting.reduce(Int64(0)) { $0 + Int64($1.data.count) }
        return try await withQuota(reserving: bytes, for: account) {
            let stored = try await storeDurably(fitting, for: account)
            var results = [Result<ItemResponse, ProtocolError>?](repeating: nil, count: operations.count)
            var applying: [(index: Int, operation: ItemBatchOperation)] = []
            for (index, operation) in operations.enumerated() {
                if let error = operation.refusal(among: refusing) {
                    results[index] = .failure(error)
                } else {
                    applying.append((index, operation))
                }
            }
            let (added, applied) = try await store.applyItemBatch(
                applying.map(\.operation), addingChunks: stored, in: container)
            var refused: [ChunkHash: ProtocolError] = [:]
            for (chunk, outcome) in zip(stored, added) {
                switch outcome {
                case .added:
                    metrics.bytesIn.increment(by: chunk.size)
                    metrics.chunksIn.increment()
                case .known: break
                case .refused(let error): refused[chunk.hash] = error
                }
            }
            for ((index, operation), result) in zip(applying, applied) {
                // Its chunk was refused for the quota after all (another request took the room meanwhile): that,
                // not the missing chunk it led to, is why.
                if case .failure(let error) = result, error.code == .chunksMissing,
                    let quota = operation.refusal(among: refused)
                {
                    results[index] = .failure(quota)
                } else {
                    results[index] = result
                }
            }
            return results.map { $0! }
        }
    }

    /// Which of `chunks`, in order, fit in the account's quota beside what it uses and what uploads under way hold;
    /// each of the others with the refusal of the operations naming it.
    private func fitQuota(_ chunks: [InlineChunk], for account: AccountID) async throws
        -> (fitting: [InlineChunk], over: [ChunkHash: ProtocolError])
    {
        guard !chunks.isEmpty, let record = try await store.account(id: account), let limit = record.quotaBytes
        else { return (chunks, [:]) }
        var used = record.usedBytes.addingReportingOverflow(quota.reserved(for: account)).partialValue
        var fitting: [InlineChunk] = []
        var over: [ChunkHash: ProtocolError] = [:]
        for chunk in chunks {
            let size = Int64(chunk.data.count)
            if size <= limit - used {
                fitting.append(chunk)
                used += size
            } else {
                over[chunk.hash] = ProtocolError(
                    .quotaExceeded,
                    "storing \(size) more bytes would take the account over its \(limit)-byte quota; the chunk "
                        + "\(chunk.hash) was not stored")
            }
        }
        return (fitting, over)
    }

    /// Stores `chunks` (their hashes checked) durably, together.
    /// - Returns: The chunks stored, to be recorded.
    private func storeDurably(_ chunks: [InlineChunk], for account: AccountID) async throws -> [ChunkReference] {
        var uploads: [(upload: any ChunkUpload, hash: ChunkHash)] = []
        do {
            for chunk in chunks {
                let upload = try await self.chunks.beginUpload(for: account)
                uploads.append((upload, chunk.hash))
                try chunk.data.withUnsafeBytes { try upload.write($0) }
            }
            try await self.chunks.finish(uploads)
        } catch {
            for (upload, _) in uploads { upload.cancel() }
            throw error
        }
        return chunks.map { ChunkReference(hash: $0.hash, size: Int64($0.data.count)) }
    }
}
