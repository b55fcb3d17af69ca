import DocumentKit
import Foundation
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The machine's file system, through its system calls: the engine's disk unless another is handed in.
public struct PosixDisk: LocalDisk {
    /// The file system.
    public init() {}

    public func identity(at url: URL) -> FileIdentity? { FileIdentity.of(path: url.path) }

    public func lookUp(_ url: URL) throws -> FileIdentity? { try FileIdentity.lookUp(path: url.path) }

    public func contentsOfDirectory(at url: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url.path)
    }

    public func createDirectory(at url: URL) throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func removeItem(at url: URL) throws { try FileManager.default.removeItem(at: url) }

    public func removeEmptyDirectory(at url: URL) -> Bool { rmdir(url.path) == 0 || errno == ENOENT }

    public func moveItem(at source: URL, to target: URL) throws {
        // One `renameat2` that refuses to replace; Foundation's move where the file system cannot do that (or the
        // target is on another one): it looks before it renames, and copies across file systems.
        if let renameNoReplace = Self.renameNoReplace {
            if renameNoReplace(AT_FDCWD, source.path, AT_FDCWD, target.path, 1 /* RENAME_NOREPLACE */) == 0 { return }
            let failure = errno
            guard [EINVAL, ENOSYS, EXDEV].contains(failure) else {
                throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
            }
        }
        try FileManager.default.moveItem(at: source, to: target)
    }

    /// `renameat2(2)`, which Glibc's Swift module leaves out; `nil` where the C library lacks it.
    private static let renameNoReplace:
        (@convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32)? = {
            #if os(Linux)
                guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") else { return nil }
                return unsafeBitCast(
                    symbol,
                    to: (@convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32)
                        .self)
            #else
                return nil
            #endif
        }()

    public func replaceItem(at target: URL, withItemAt source: URL) throws {
        guard rename(source.path, target.path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    public func setModificationTime(of url: URL, to nanoseconds: Int64) throws {
        let (seconds, remainder) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        let (whole, fraction) = remainder < 0 ? (seconds - 1, remainder + 1_000_000_000) : (seconds, remainder)
        // The access time is left as it is: `UTIME_OMIT`, which Glibc's Swift module leaves out.
        let omit = (1 << 30) - 2
        let times = [timespec(tv_sec: 0, tv_nsec: omit), timespec(tv_sec: Int(whole), tv_nsec: Int(fraction))]
        guard utimensat(AT_FDCWD, url.path, times, 0) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    public func openFile(at url: URL) throws -> any DiskFile {
        try PosixFile(url, flags: O_RDWR | O_CREAT | O_CLOEXEC)
    }

    public func openFileForReading(at url: URL) throws -> any DiskFile {
        try PosixFile(url, flags: O_RDONLY | O_CLOEXEC)
    }

    public func chunksAndContentHash(ofFileAt url: URL, chunker: FileChunker) throws -> ChunkedContent {
        try chunker.chunksAndContentHash(ofFileAt: url)
    }

    public func chunksAndContentHash(
        ofFileAt url: URL, chunker: FileChunker, onChunk: (ChunkReference, Int64) throws -> Void
    ) throws -> ChunkedContent {
        var offset: Int64 = 0
        return try chunker.chunksAndContentHash(ofFileAt: url) { chunk, _ in
            try onChunk(chunk, offset)
            offset += chunk.size
        }
    }

    public var blocksThreads: Bool { true }
}

/// A file open through its descriptor.
final class PosixFile: DiskFile {
    private let descriptor: Int32

    init(_ url: URL, flags: Int32) throws {
        descriptor = open(url.path, flags, 0o644)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    deinit { close(descriptor) }

    func read(at offset: Int64, count: Int) -> Data? {
        var data = Data(count: count)
        let read = data.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
        return read == count ? data : nil
    }

    func write(_ data: Data, at offset: Int64) throws {
        var done = 0
        while done < data.count {
            let written = data.withUnsafeBytes {
                pwrite(descriptor, $0.baseAddress! + done, data.count - done, off_t(offset) + off_t(done))
            }
            guard written > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            done += written
        }
    }

    func truncate(to size: Int64) throws {
        guard ftruncate(descriptor, off_t(size)) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    func synchronize() throws {
        guard fsync(descriptor) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    func startWriting() { FileWriteback.start(descriptor) }
}
