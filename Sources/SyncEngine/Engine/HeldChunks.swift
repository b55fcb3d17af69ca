import Foundation
import Synchronization
import UbiquityProtocol

/// The chunk bytes the last feed page carried (``ChangePage/chunks``: the content of small new files other devices
/// saved), kept until the next page replaces them so that the downloads the page leads to take them from here rather
/// than asking the service. A hint: a chunk not held is downloaded as usual, and every chunk is checked as a
/// downloaded one is.
final class HeldChunks: Sendable {
    private let chunks = Mutex<[ChunkHash: Data]>([:])

    /// Holds `carried` in place of what the previous page carried.
    func replace(with carried: [InlineChunk]) {
        let held = Dictionary(carried.map { ($0.hash, $0.data) }, uniquingKeysWith: { first, _ in first })
        chunks.withLock { $0 = held }
    }

    /// The bytes held for `hash`, if any.
    func bytes(of hash: ChunkHash) -> Data? {
        chunks.withLock { $0[hash] }
    }
}
