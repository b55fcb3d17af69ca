import Crypto
import Foundation
import NIOCore
import Synchronization
import UbiquityProtocol

/// Chunk bytes in an S3 bucket: each chunk one object at `<prefix>accounts/<account>/chunks/<hash>`, so each
/// account's data lies under its own key prefix and nothing is shared between accounts.
///
/// An upload is received in memory (a chunk is at most the service's chunk limit, 16 MiB by default) and hashed as
/// it arrives; finishing it checks the hash, then puts the object with the hash as its `x-amz-content-sha256`, which
/// the server checks again before it stores anything, and S3 makes an object visible only whole — so no half-written
/// or mismatched chunk is ever seen. A chunk read back is checked against its hash before any of it is handed out.
public struct S3ChunkStore: ChunkStore {
    public let client: S3Client
    /// What every key starts with (empty, or ending in `/`): several deployments, or tests, can share a bucket.
    public let prefix: String
    private let counter = UploadCounter()

    public init(client: S3Client, prefix: String = "") {
        self.client = client
        self.prefix = prefix.isEmpty || prefix.hasSuffix("/") ? prefix : prefix + "/"
    }

    /// Opens the store at `url` (``S3Client/Configuration/init(url:environment:)``; its `prefix=` query, if any,
    /// goes before `prefix`), making the bucket if it is missing.
    public static func open(url: String, prefix: String = "") async throws -> S3ChunkStore {
        let configuration = try S3Client.Configuration(url: url)
        let store = S3ChunkStore(client: S3Client(configuration), prefix: configuration.prefix + prefix)
        try await store.client.createBucket()
        return store
    }

    /// The key of `account`'s chunk `hash`.
    public func key(of hash: ChunkHash, of account: AccountID) -> String {
        "\(prefix)accounts/\(account.string)/chunks/\(hash.string)"
    }

    /// How many uploads were begun and neither finished nor cancelled.
    public var unfinishedUploads: Int { counter.count.withLock { $0 } }

    public func beginUpload(for account: AccountID) async throws -> any ChunkUpload {
        counter.count.withLock { $0 += 1 }
        return S3ChunkUpload(store: self, account: account)
    }

    public func contains(_ hash: ChunkHash, of account: AccountID) async throws -> Bool {
        try await client.size(of: key(of: hash, of: account)) != nil
    }

    public func read(_ hash: ChunkHash, of account: AccountID, pieceSize: Int) async throws -> ChunkReader? {
        let key = key(of: hash, of: account)
        guard let bytes = try await client.get(key) else { return nil }
        guard Array(SHA256.hash(data: bytes.readableBytesView)) == hash.digest else {
            throw ProtocolError(.internalError, "the stored chunk \(hash) does not match its hash (\(key))")
        }
        let pieces = Mutex(bytes)
        return ChunkReader(size: Int64(bytes.readableBytes)) {
            pieces.withLock { rest in
                guard rest.readableBytes > 0 else { return nil }
                return rest.readBytes(length: min(max(pieceSize, 1), rest.readableBytes))
            }
        }
    }

    /// Nothing is left behind by an interrupted upload: its bytes were only in memory, and S3 shows no object
    /// that did not arrive whole.
    public func removeAbandonedUploads() async throws {}

    public func finish(_ uploads: [(upload: any ChunkUpload, hash: ChunkHash)]) async throws {
        let received = uploads.compactMap { $0.upload as? S3ChunkUpload }
        guard received.count == uploads.count else {
            for (upload, _) in uploads { upload.cancel() }
            throw ProtocolError(.internalError, "an upload of another chunk store was handed to the S3 store")
        }
        // Every hash is checked before anything is stored: one wrong chunk drops them all.
        var sealed: [(upload: S3ChunkUpload, bytes: ByteBuffer, hash: ChunkHash)] = []
        for (upload, hash) in zip(received, uploads.map(\.hash)) {
            do {
                sealed.append((upload, try upload.seal(expecting: hash), hash))
            } catch {
                for upload in received { upload.cancel() }
                throw error
            }
        }
        defer { for entry in sealed { entry.upload.end() } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var running = 0
            for entry in sealed {
                if running == 8 {
                    try await group.next()
                    running -= 1
                }
                group.addTask {
                    try await client.put(
                        key(of: entry.hash, of: entry.upload.account), bytes: entry.bytes,
                        sha256: SignatureV4.hex(entry.hash.digest))
                }
                running += 1
            }
            try await group.waitForAll()
        }
    }

    fileprivate func ended() { counter.count.withLock { $0 -= 1 } }
}

/// The uploads of a store not ended yet.
private final class UploadCounter: Sendable {
    let count = Mutex(0)
}

/// A chunk being received for ``S3ChunkStore``: its bytes in memory, hashed as they come.
final class S3ChunkUpload: ChunkUpload, @unchecked Sendable {
    // @unchecked Sendable: as every upload, one request writes it, then finishes or cancels it, one call after
    // another; only `ended` is also read by the store, under `lock`.
    let account: AccountID
    private let store: S3ChunkStore
    private var bytes = ByteBuffer()
    /// The bytes received, kept once they are dropped (the routes record a stored chunk by this length).
    private var received: Int64 = 0
    private var hasher = SHA256()
    private let lock = NSLock()
    private var ended = false

    init(store: S3ChunkStore, account: AccountID) {
        self.store = store
        self.account = account
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        self.bytes.writeBytes(bytes)
        received += Int64(bytes.count)
        hasher.update(bufferPointer: bytes)
    }

    var byteCount: Int64 { received }

    func finish(expecting hash: ChunkHash) async throws {
        try await store.finish([(self, hash)])
    }

    /// The bytes, once they are known to hash to `hash`.
    /// - Throws: ``ProtocolError/Code/chunkHashMismatch`` (the upload is then dropped).
    func seal(expecting hash: ChunkHash) throws -> ByteBuffer {
        guard Array(hasher.finalize()) == hash.digest else {
            cancel()
            throw ProtocolError(.chunkHashMismatch, "the bytes received do not hash to \(hash)")
        }
        return bytes
    }

    func cancel() { end() }

    /// Drops the bytes; the store counts the upload ended (once).
    func end() {
        let first = lock.withLock {
            defer { ended = true }
            return !ended
        }
        bytes = ByteBuffer()
        if first { store.ended() }
    }
}
