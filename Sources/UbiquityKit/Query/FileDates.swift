import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A file's content change and creation dates, as ``MetadataItem`` reports them.
///
/// The creation date is the file's birth time from `statx(2)` (ext4, btrfs, xfs and tmpfs keep it). The C library
/// declares `statx` only for `_GNU_SOURCE`, so Swift does not see it; it is looked up by name, and its result read
/// at the offsets of the kernel's `struct statx`, which is part of the kernel's stable interface. Without it (an old
/// kernel or C library) the dates come from `lstat`, with no creation date.
struct FileDates: Sendable, Equatable {
    /// The last change of the content (`st_mtim`).
    var contentChange: Date?
    /// The birth time, when the file system keeps it.
    var creation: Date?

    /// No dates (a placeholder).
    init() {}

    /// The dates of the item at `path` (not following a symbolic link); none when it is not there.
    init(ofItemAt path: String) {
        if let read = Self.statxDates(path) {
            self = read
            return
        }
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        contentChange = Self.date(seconds: Int64(info.st_mtim.tv_sec), nanoseconds: Int64(info.st_mtim.tv_nsec))
    }

    private static func date(seconds: Int64, nanoseconds: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(seconds) + TimeInterval(nanoseconds) / 1_000_000_000)
    }

    private typealias Statx =
        @convention(c) (
            Int32, UnsafePointer<CChar>, Int32, UInt32, UnsafeMutableRawPointer
        ) -> Int32

    /// `statx`, when the C library has it.
    private static let statx: Statx? = dlsym(nil, "statx").map {
        unsafeBitCast($0, to: Statx.self)
    }

    // From <linux/stat.h>: the request flags and the offsets of the fields read.
    private static let atFileDescriptorOfCurrentDirectory: Int32 = -100
    private static let atSymbolicLinkNoFollow: Int32 = 0x100
    private static let modificationTimeMask: UInt32 = 0x40
    private static let birthTimeMask: UInt32 = 0x800
    private static let birthTimeOffset = 0x50
    private static let modificationTimeOffset = 0x70

    private static func statxDates(_ path: String) -> FileDates? {
        guard let statx else { return nil }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 8)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: 256)
        let result = path.withCString {
            statx(
                atFileDescriptorOfCurrentDirectory, $0, atSymbolicLinkNoFollow, modificationTimeMask | birthTimeMask,
                buffer)
        }
        guard result == 0 else { return errno == ENOSYS ? nil : FileDates() }
        let mask = buffer.load(as: UInt32.self)
        func time(at offset: Int) -> Date {
            date(
                seconds: buffer.load(fromByteOffset: offset, as: Int64.self),
                nanoseconds: Int64(buffer.load(fromByteOffset: offset + 8, as: UInt32.self)))
        }
        var dates = FileDates()
        if mask & modificationTimeMask != 0 { dates.contentChange = time(at: modificationTimeOffset) }
        if mask & birthTimeMask != 0 { dates.creation = time(at: birthTimeOffset) }
        return dates
    }
}
