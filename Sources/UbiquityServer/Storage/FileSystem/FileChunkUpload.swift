import Crypto
import Foundation
import NIOPosix
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An upload into ``FileChunkStore``'s `incoming/` folder.
///
/// `@unchecked Sendable`: an upload belongs to the one request that began it, which calls it from one task, one
/// call at a time (the protocol's contract); it is never shared.
final class FileChunkUpload: ChunkUpload, @unchecked Sendable {
    private let store: FileChunkStore
    private let account: AccountID
    private let temporary: URL
    private var descriptor: Int32
    private var hasher = SHA256()
    private(set) var byteCount: Int64 = 0

    init(store: FileChunkStore, account: AccountID, temporary: URL, descriptor: Int32) {
        self.store = store
        self.account = account
        self.temporary = temporary
        self.descriptor = descriptor
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard descriptor >= 0 else { throw POSIXError(.EBADF) }
        hasher.update(bufferPointer: bytes)
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw POSIXError.current("write chunk")
            }
            offset += written
        }
        byteCount += Int64(bytes.count)
    }

    func finish(expecting hash: ChunkHash) async throws {
        try await NIOThreadPool.singleton.runIfActive { [self] in
            let file = try seal(expecting: hash)
            defer { close(file) }
            try flush(file)
            let folder = try place(hash)
            FileChunkUpload.flushFolder(folder)
        }
    }

    /// Checks the bytes against `hash` and hands over the open file (the caller closes it); a wrong hash drops them.
    func seal(expecting hash: ChunkHash) throws -> Int32 {
        guard descriptor >= 0 else { throw POSIXError(.EBADF) }
        let file = descriptor
        descriptor = -1
        let actual = try ChunkHash(digest: hasher.finalize())
        guard actual == hash else {
            close(file)
            unlink(temporary.path)
            throw ProtocolError(.chunkHashMismatch, "the bytes sent hash to \(actual), not \(hash); nothing was stored")
        }
        // Starts writing the bytes to disk without waiting, so that a batch's flushes that follow find their files'
        // writes under way together.
        _ = Self.startWriting?(file, 0, 0, 2)  // SYNC_FILE_RANGE_WRITE
        return file
    }

    /// Flushes a sealed file to disk; a failure drops it.
    func flush(_ file: Int32) throws {
        guard fsync(file) == 0 else {
            unlink(temporary.path)
            throw POSIXError.current("fsync chunk")
        }
    }

    /// Renames a sealed, flushed file into place as the chunk `hash`.
    /// - Returns: The folder it is now in (to be flushed).
    func place(_ hash: ChunkHash) throws -> URL {
        let destination = store.location(of: hash, of: account)
        let folder = destination.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        guard rename(temporary.path, destination.path) == 0 else {
            unlink(temporary.path)
            throw POSIXError.current("rename chunk into \(folder.path)")
        }
        return folder
    }

    /// `sync_file_range(2)`, which Glibc's Swift module leaves out; `nil` where the C library has none.
    private static let startWriting: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32)? = {
        #if os(Linux)
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sync_file_range") else { return nil }
            return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32).self)
        #else
            return nil
        #endif
    }()

    /// Drops a sealed file that will not be placed.
    func discard() { unlink(temporary.path) }

    /// Flushes a folder's entries to disk.
    static func flushFolder(_ folder: URL) {
        let directory = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    func cancel() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
        unlink(temporary.path)
    }

    deinit { cancel() }
}

private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
