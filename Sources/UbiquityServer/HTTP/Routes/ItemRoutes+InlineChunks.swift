import Crypto
import Foundation
import UbiquityProtocol

extension RouteEnvironment {
    /// Applies a batch that brought chunks with it (``ItemBatchRequest/chunks``): each chunk is checked against its
    /// hash, the right ones the account lacks are stored durably together, and then recorded in the operations'
    /// transaction. An operation naming a chunk whose bytes were wrong is refused alone
    /// (``ProtocolError/Code/chunkHashMismatch``), and one naming a chunk the quota had no room for alone too
    /// (``ProtocolError/Code/quotaExceeded``); the others apply as they would after a separate upload.
    func applyItemBatch(
        _ operations: [ItemBatchOperation], bringing inline: [InlineChunk], in container: ContainerKey
    ) async throws -> [Result<ItemResponse, ProtocolError>] {
        let chunkLimit = configuration.limits.chunkBytes
        var wrong: [ChunkHash: ProtocolError] = [:]
        var right: [InlineChunk] = []
        var seen = Set<ChunkHash>()
        metrics.uploadBytes.increment(by: Int64(inline.reduce(0) { $0 + $1.data.count }))
        for chunk in inline where seen.insert(chunk.hash).inserted {
            guard chunk.data.count <= chunkLimit else {
                throw ProtocolError(
                    .bodyTooLarge, "a chunk is at most \(chunkLimit) bytes; \(chunk.hash) is \(chunk.data.count)")
            }
            let actual = try ChunkHash(digest: SHA256.hash(data: chunk.data))
            if actual == chunk.hash {
                right.append(chunk)
            } else {
                wrong[chunk.hash] = ProtocolError(
                    .chunkHashMismatch, "the bytes sent as chunk \(chunk.hash) hash to \(actual); nothing was stored")
            }
        }
        // The quota is counted chunk by chunk as they are recorded, so that one not fitting refuses only the
        // operations naming it (the bytes are in already: nothing is gained by refusing them early).
        let stored = try await storeNew(right, for: container.account)
        var results = [Result<ItemResponse, ProtocolError>?](repeating: nil, count: operations.count)
        var applying: [(index: Int, operation: ItemBatchOperation)] = []
        for (index, operation) in operations.enumerated() {
            if let error = operation.namedChunks.lazy.compactMap({ wrong[$0.hash] }).first {
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
            // Its chunk was refused for the quota: that, not the missing chunk it led to, is why.
            if case .failure(let error) = result, error.code == .chunksMissing,
                let quota = operation.namedChunks.lazy.compactMap({ refused[$0.hash] }).first
            {
                results[index] = .failure(quota)
            } else {
                results[index] = result
            }
        }
        return results.map { $0! }
    }

    /// Stores durably, together, the chunks among `chunks` (their hashes checked) that the account lacks.
    /// - Returns: The chunks stored, to be recorded.
    private func storeNew(_ chunks: [InlineChunk], for account: AccountID) async throws -> [ChunkReference] {
        var known: [ChunkHash: Int64] = [:]
        for start in stride(from: 0, to: chunks.count, by: 1_000) {
            let slice = chunks[start..<min(start + 1_000, chunks.count)]
            known.merge(try await store.chunkSizes(slice.map(\.hash), of: account)) { first, _ in first }
        }
        var uploads: [(upload: any ChunkUpload, hash: ChunkHash)] = []
        do {
            for chunk in chunks where known[chunk.hash] == nil {
                let upload = try await self.chunks.beginUpload(for: account)
                uploads.append((upload, chunk.hash))
                try chunk.data.withUnsafeBytes { try upload.write($0) }
            }
            try await self.chunks.finish(uploads)
        } catch {
            for (upload, _) in uploads { upload.cancel() }
            throw error
        }
        return uploads.map { ChunkReference(hash: $0.hash, size: $0.upload.byteCount) }
    }
}
