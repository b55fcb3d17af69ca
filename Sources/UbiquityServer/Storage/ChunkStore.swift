import Foundation
import UbiquityProtocol

/// Where the service keeps chunk bytes, content-addressed and separate for each account (no chunk is shared
/// between accounts, so one account can never learn what another stores).
///
/// Writing is two-step so that a crash never leaves a chunk that does not match its hash: bytes go to a
/// ``ChunkUpload`` (hashed as they arrive) and only ``ChunkUpload/finish(expecting:)`` with the right hash makes
/// them a chunk, durably. ``FileChunkStore`` is the embedded default.
public protocol ChunkStore: Sendable {
    /// Starts receiving a chunk's bytes for `account`.
    func beginUpload(for account: AccountID) async throws -> any ChunkUpload
    /// Whether the account's chunk with this hash is stored.
    func contains(_ hash: ChunkHash, of account: AccountID) async throws -> Bool
    /// The chunk's bytes in pieces of at most `pieceSize`, or `nil` when it is not stored.
    func read(_ hash: ChunkHash, of account: AccountID, pieceSize: Int) async throws -> ChunkReader?
    /// Removes what interrupted uploads left behind (run at start-up).
    func removeAbandonedUploads() async throws
    /// Checks several received chunks against their hashes and stores them durably, together: none is stored if
    /// one is wrong (all are dropped). A store may flush them to disk at once, which costs far less than one by one.
    /// - Throws: ``ProtocolError/Code/chunkHashMismatch`` naming the first wrong one.
    func finish(_ uploads: [(upload: any ChunkUpload, hash: ChunkHash)]) async throws
}

extension ChunkStore {
    /// Finishes each upload in turn (after checking them all, where the upload allows).
    public func finish(_ uploads: [(upload: any ChunkUpload, hash: ChunkHash)]) async throws {
        for (index, (upload, hash)) in uploads.enumerated() {
            do {
                try await upload.finish(expecting: hash)
            } catch {
                for (later, _) in uploads[(index + 1)...] { later.cancel() }
                throw error
            }
        }
    }
}

/// A chunk being received by one request. Writes are small local appends, so they are synchronous.
public protocol ChunkUpload: Sendable {
    /// Appends bytes.
    func write(_ bytes: UnsafeRawBufferPointer) throws
    /// The bytes received so far.
    var byteCount: Int64 { get }
    /// Checks the bytes hash to `hash` and stores them durably as that chunk.
    /// - Throws: ``ProtocolError/Code/chunkHashMismatch`` (the bytes are dropped).
    func finish(expecting hash: ChunkHash) async throws
    /// Drops the bytes.
    func cancel()
}

/// A stored chunk's bytes, read piece by piece so memory does not grow with the chunk.
public struct ChunkReader: AsyncSequence, Sendable {
    public typealias Element = [UInt8]

    /// The chunk's length in bytes.
    public let size: Int64
    private let next: @Sendable () async throws -> [UInt8]?

    /// Creates a reader from a function that returns the next piece, or `nil` at the end.
    public init(size: Int64, next: @escaping @Sendable () async throws -> [UInt8]?) {
        self.size = size
        self.next = next
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let next: @Sendable () async throws -> [UInt8]?
        public mutating func next() async throws -> [UInt8]? { try await next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(next: next) }
}
