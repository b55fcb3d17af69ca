import Crypto
import Foundation
import Synchronization
import UbiquityProtocol

/// The chunk bytes the last feed page carried (``ChangePage/chunks``: the content of small new files other devices
/// saved), kept until the next page replaces them so that the downloads the page leads to take them from here rather
/// than asking the service. A hint: only bytes that hash to their chunk's hash are held, and a chunk not held is
/// downloaded as usual.
final class HeldChunks: Sendable {
    private let chunks = Mutex<[ChunkHash: Data]>([:])

    /// Holds those of `carried` whose bytes are their hash's in place of what the previous page carried.
    func replace(with carried: [InlineChunk]) {
        var held: [ChunkHash: Data] = [:]
        for chunk in carried where held[chunk.hash] == nil {
            if (try? ChunkHash(digest: SHA256.hash(data: chunk.data))) == chunk.hash { held[chunk.hash] = chunk.data }
        }
        chunks.withLock { $0 = held }
    }

    /// The bytes held for `hash`, if any.
    func bytes(of hash: ChunkHash) -> Data? {
        chunks.withLock { $0[hash] }
    }
}
