import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What `statx(2)` says of an item, not following a final symbolic link: `lstat`'s facts, and the birth time where
/// the file system keeps it (ext4, btrfs, xfs, tmpfs).
///
/// The C library declares `statx` only for `_GNU_SOURCE`, so Swift does not see it: it is looked up by name, and its
/// result read at the offsets of the kernel's `struct statx`, part of the kernel's stable interface. Without it (an
/// old kernel or C library) the facts come from `lstat`, with no birth time.
package struct FileStatus: Sendable, Equatable {
    /// The device, as `st_dev` spells it.
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    /// `st_mode`.
    package var mode: UInt32
    /// Times in nanoseconds since 1970.
    package var modified: Int64
    package var changed: Int64
    /// The birth time, when the file system keeps it.
    package var born: Int64?

    /// The status of the item at `path`; `nil` when nothing can be found there.
    package static func of(path: String) -> FileStatus? { (try? lookUp(path: path)) ?? nil }

    /// The status of the item at `path`; `nil` when nothing is there (`ENOENT`, `ENOTDIR`).
    /// - Throws: What kept it from being looked at (`EACCES` below a folder whose permissions were taken away,
    ///   `EIO`, …): whether anything is there is not known.
    package static func lookUp(path: String) throws(POSIXError) -> FileStatus? {
        if let statx {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 8)
            defer { buffer.deallocate() }
            buffer.initializeMemory(as: UInt8.self, repeating: 0, count: 256)
            let (result, failure) = path.withCString {
                let result = statx(currentDirectory, $0, symbolicLinkNoFollow, basicStats | birthTime, buffer)
                return (result, errno)
            }
            if result == 0, buffer.load(as: UInt32.self) & basicStats == basicStats {
                return FileStatus(statx: buffer)
            }
            // Without statx in the kernel, or a file system that leaves some basic facts out: lstat says them.
            if result != 0 && failure != ENOSYS { return try missing(failure) }
        }
        var info = stat()
        guard lstat(path, &info) == 0 else { return try missing(errno) }
        return FileStatus(info)
    }

    /// Nothing, for an error that says nothing is there; else the error.
    private static func missing(_ failure: Int32) throws(POSIXError) -> FileStatus? {
        if failure == ENOENT || failure == ENOTDIR { return nil }
        throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
    }

    /// The facts `lstat` reported.
    package init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        mode = UInt32(info.st_mode)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
    }

    /// The facts in a `struct statx` whose basic facts are all there.
    private init(statx buffer: UnsafeMutableRawPointer) {
        func time(at offset: Int) -> Int64 {
            buffer.load(fromByteOffset: offset, as: Int64.self) * 1_000_000_000
                + Int64(buffer.load(fromByteOffset: offset + 8, as: UInt32.self))
        }
        let major = UInt64(buffer.load(fromByteOffset: 0x88, as: UInt32.self))
        let minor = UInt64(buffer.load(fromByteOffset: 0x8c, as: UInt32.self))
        // The C library's makedev, as lstat spells st_dev.
        device =
            (major & 0xfff) << 8 | (major & 0xffff_f000) << 32 | (minor & 0xff) | (minor & 0xffff_ff00) << 12
        inode = buffer.load(fromByteOffset: 0x20, as: UInt64.self)
        size = Int64(bitPattern: buffer.load(fromByteOffset: 0x28, as: UInt64.self))
        mode = UInt32(buffer.load(fromByteOffset: 0x1c, as: UInt16.self))
        modified = time(at: 0x70)
        changed = time(at: 0x60)
        born = buffer.load(as: UInt32.self) & Self.birthTime != 0 ? time(at: 0x50) : nil
    }

    private typealias Statx =
        @convention(c) (Int32, UnsafePointer<CChar>, Int32, UInt32, UnsafeMutableRawPointer) -> Int32

    /// `statx`, when the C library has it.
    private static let statx: Statx? = dlsym(nil, "statx").map { unsafeBitCast($0, to: Statx.self) }

    // From <linux/fcntl.h> and <linux/stat.h>.
    private static let currentDirectory: Int32 = -100
    private static let symbolicLinkNoFollow: Int32 = 0x100
    private static let basicStats: UInt32 = 0x7ff
    private static let birthTime: UInt32 = 0x800
}
