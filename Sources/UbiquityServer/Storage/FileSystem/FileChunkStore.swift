import Crypto
import Foundation
import NIOPosix
import Synchronization
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The embedded default ``ChunkStore``: small chunks packed into large files (``ChunkPacks``, under
/// `<root>/packs/`), and each larger one (over ``FileChunkUpload/memoryLimit``, or arriving while the uploads'
/// memory budget is spent) a file of its own under `<root>/<account>/<first two hex digits>/<hash>`.
///
/// An upload is hashed as it arrives and stored only when its hash is right. A packed chunk is indexed only once
/// its bytes were flushed; a chunk of its own is written to `<root>/incoming/`, flushed, renamed into place and its
/// folder flushed. So after any crash every chunk the store knows is complete and matches its hash, and
/// ``removeAbandonedUploads()`` clears the rest. Chunks stored one file each before packs existed are read as
/// they are.
public struct FileChunkStore: ChunkStore {
    /// The folder holding every account's chunks.
    public let root: URL
    let packs: ChunkPacks
    let memory: UploadMemory

    /// Opens (and creates) a chunk store in `root`.
    /// - Parameters:
    ///   - memoryBudget: The most bytes its uploads hold in memory at once.
    ///   - packBytes: The size past which a pack file takes no more chunks.
    public init(root: URL, memoryBudget: Int = 64 << 20, packBytes: Int64 = 256 << 20) throws {
        self.root = root
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("incoming", isDirectory: true), withIntermediateDirectories: true)
        packs = try ChunkPacks(folder: root.appendingPathComponent("packs", isDirectory: true), packLimit: packBytes)
        memory = UploadMemory(budget: memoryBudget)
    }

    var incoming: URL { root.appendingPathComponent("incoming", isDirectory: true) }

    /// The uploads begun and neither finished nor dropped whose bytes are held in memory (the others each have a
    /// file in `incoming/`).
    public var unfinishedUploadsInMemory: Int { memory.unfinishedInMemory }

    /// Where the account's chunk with this hash lives when it is a file of its own.
    public func location(of hash: ChunkHash, of account: AccountID) -> URL {
        root.appendingPathComponent(account.string, isDirectory: true)
            .appendingPathComponent(String(hash.string.prefix(2)), isDirectory: true)
            .appendingPathComponent(hash.string, isDirectory: false)
    }

    /// Where the account's chunk with this hash lies when it is packed: the pack file, the offset and the length.
    public func packedLocation(of hash: ChunkHash, of account: AccountID) throws -> (
        pack: URL, offset: Int64, length: Int64
    )? {
        try packs.location(of: hash, of: account).map { (packs.url(ofPack: $0.pack), $0.offset, $0.length) }
    }

    public func beginUpload(for account: AccountID) async throws -> any ChunkUpload {
        FileChunkUpload(store: self, account: account)
    }

    public func contains(_ hash: ChunkHash, of account: AccountID) async throws -> Bool {
        try packs.location(of: hash, of: account) != nil
            || FileManager.default.fileExists(atPath: location(of: hash, of: account).path)
    }

    public func read(_ hash: ChunkHash, of account: AccountID, pieceSize: Int) async throws -> ChunkReader? {
        if let packed = try packs.location(of: hash, of: account) {
            return try packs.reader(packed, pieceSize: pieceSize)
        }
        let path = location(of: hash, of: account).path
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw POSIXError.current("open \(path)")
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            close(descriptor)
            throw POSIXError.current("stat \(path)")
        }
        let file = ReadableFile(descriptor: descriptor)
        let size = Int64(info.st_size)
        return ChunkReader(size: size) { try file.next(pieceSize: pieceSize) }
    }

    /// Checks every upload's hash first, then packs the small ones (written together, one flush, one transaction
    /// of the index) and flushes the files of the others, renames them into place and flushes each folder once: a batch
    /// goes to the disk together instead of each chunk waiting for the disk in turn. The flushes run on NIO's
    /// blocking-work threads, never on the few threads every request's tasks share.
    public func finish(_ uploads: [(upload: any ChunkUpload, hash: ChunkHash)]) async throws {
        let files = uploads.compactMap { $0.upload as? FileChunkUpload }
        guard files.count == uploads.count else {
            for (upload, _) in uploads { upload.cancel() }
            throw POSIXError(.EINVAL)
        }
        let hashes = uploads.map(\.hash)
        let packs = packs
        try await NIOThreadPool.singleton.runIfActive { try Self.finish(files, hashes, packs) }
    }

    private static func finish(_ uploads: [FileChunkUpload], _ hashes: [ChunkHash], _ packs: ChunkPacks) throws {
        var sealed: [(upload: FileChunkUpload, stored: FileChunkUpload.Sealed, hash: ChunkHash)] = []
        defer {
            for entry in sealed {
                if case .file(let descriptor) = entry.stored { close(descriptor) }
                entry.upload.discard()
            }
        }
        do {
            for (upload, hash) in zip(uploads, hashes) {
                sealed.append((upload, try upload.seal(expecting: hash), hash))
            }
        } catch {
            for upload in uploads.dropFirst(sealed.count) { upload.cancel() }
            throw error
        }
        var packed: [(account: AccountID, hash: ChunkHash, bytes: [UInt8])] = []
        var files: [(upload: FileChunkUpload, descriptor: Int32, hash: ChunkHash)] = []
        for entry in sealed {
            switch entry.stored {
            case .bytes(let bytes): packed.append((entry.upload.account, entry.hash, bytes))
            case .file(let descriptor): files.append((entry.upload, descriptor, entry.hash))
            }
        }
        for entry in files { try entry.upload.flush(entry.descriptor) }
        try packs.append(packed)
        var folders = Set<URL>()
        for entry in files { folders.insert(try entry.upload.place(entry.hash)) }
        for folder in folders { FileChunkUpload.flushFolder(folder) }
    }

    public func removeAbandonedUploads() async throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: incoming.path) {
            try? FileManager.default.removeItem(at: incoming.appendingPathComponent(name, isDirectory: false))
        }
    }
}

/// A file read piece by piece; closed at the end, on an error, or when dropped.
private final class ReadableFile: Sendable {
    private let descriptor: Mutex<Int32>

    init(descriptor: Int32) { self.descriptor = Mutex(descriptor) }

    func next(pieceSize: Int) throws -> [UInt8]? {
        try descriptor.withLock { descriptor -> [UInt8]? in
            guard descriptor >= 0 else { return nil }
            var piece = [UInt8](repeating: 0, count: pieceSize)
            let count = piece.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, pieceSize) }
            if count <= 0 {
                close(descriptor)
                descriptor = -1
                if count < 0 { throw POSIXError.current("read chunk") }
                return nil
            }
            piece.removeLast(pieceSize - count)
            return piece
        }
    }

    deinit {
        descriptor.withLock { if $0 >= 0 { close($0) } }
    }
}

extension POSIXError {
    /// The error `errno` names, for a failed `operation`.
    static func current(_ operation: String) -> POSIXError {
        POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO, userInfo: [NSLocalizedDescriptionKey: operation])
    }
}
