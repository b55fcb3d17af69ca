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

/// The embedded default ``ChunkStore``: one file per chunk under `<root>/<account>/<first two hex digits>/<hash>`.
///
/// An upload is written to `<root>/incoming/`, hashed as it arrives, flushed to disk, and renamed into place only
/// when its hash is right; then the folder is flushed too. So after any crash every chunk file under an account
/// is complete and matches its name, and ``removeAbandonedUploads()`` clears the rest.
public struct FileChunkStore: ChunkStore {
    /// The folder holding every account's chunks.
    public let root: URL

    /// Opens (and creates) a chunk store in `root`.
    public init(root: URL) throws {
        self.root = root
        try FileManager.default.createDirectory(at: incoming, withIntermediateDirectories: true)
    }

    var incoming: URL { root.appendingPathComponent("incoming", isDirectory: true) }

    /// Where the account's chunk with this hash lives.
    public func location(of hash: ChunkHash, of account: AccountID) -> URL {
        root.appendingPathComponent(account.string, isDirectory: true)
            .appendingPathComponent(String(hash.string.prefix(2)), isDirectory: true)
            .appendingPathComponent(hash.string, isDirectory: false)
    }

    public func beginUpload(for account: AccountID) async throws -> any ChunkUpload {
        let temporary = incoming.appendingPathComponent(UUID.random().uuidString.lowercased())
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError.current("create \(temporary.path)") }
        return FileChunkUpload(store: self, account: account, temporary: temporary, descriptor: descriptor)
    }

    public func contains(_ hash: ChunkHash, of account: AccountID) async throws -> Bool {
        FileManager.default.fileExists(atPath: location(of: hash, of: account).path)
    }

    public func read(_ hash: ChunkHash, of account: AccountID, pieceSize: Int) async throws -> ChunkReader? {
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

    /// Checks every upload's hash first (each file's writing to disk starts as it is sealed), then flushes all the
    /// files, renames them into place, and flushes each folder once: the files of a batch go to the disk together
    /// instead of each waiting for the disk in turn. The flushes run on NIO's blocking-work threads, never on the
    /// few threads every request's tasks share.
    public func finish(_ uploads: [(upload: any ChunkUpload, hash: ChunkHash)]) async throws {
        let files = uploads.compactMap { $0.upload as? FileChunkUpload }
        guard files.count == uploads.count else {
            for (upload, _) in uploads { upload.cancel() }
            throw POSIXError(.EINVAL)
        }
        let hashes = uploads.map(\.hash)
        try await NIOThreadPool.singleton.runIfActive { try Self.finish(files, hashes) }
    }

    private static func finish(_ files: [FileChunkUpload], _ hashes: [ChunkHash]) throws {
        var sealed: [(upload: FileChunkUpload, file: Int32, hash: ChunkHash)] = []
        defer { for entry in sealed { close(entry.file) } }
        do {
            for (upload, hash) in zip(files, hashes) {
                sealed.append((upload, try upload.seal(expecting: hash), hash))
            }
        } catch {
            for entry in sealed { entry.upload.discard() }
            for upload in files.dropFirst(sealed.count) { upload.cancel() }
            throw error
        }
        do {
            for entry in sealed { try entry.upload.flush(entry.file) }
        } catch {
            for entry in sealed { entry.upload.discard() }
            throw error
        }
        var folders = Set<URL>()
        for entry in sealed { folders.insert(try entry.upload.place(entry.hash)) }
        for folder in folders { FileChunkUpload.flushFolder(folder) }
    }

    public func removeAbandonedUploads() async throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: incoming.path) {
            try? FileManager.default.removeItem(at: incoming.appendingPathComponent(name))
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
