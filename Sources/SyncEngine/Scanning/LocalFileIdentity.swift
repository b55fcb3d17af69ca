#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the scanner compares to tell whether a file changed without reading it: device, inode, size, and the
/// modification and status-change times in nanoseconds. Equal identities mean "unchanged"; the same device and
/// inode at another path mean "moved".
public struct LocalFileIdentity: Hashable, Sendable, Codable {
    /// The file system's device number.
    public var device: UInt64
    /// The inode number.
    public var inode: UInt64
    /// The length in bytes (0 for a folder).
    public var size: Int64
    /// The last modification, in nanoseconds since 1970.
    public var modified: Int64
    /// The last status change, in nanoseconds since 1970.
    public var changed: Int64

    /// Creates an identity.
    public init(device: UInt64, inode: UInt64, size: Int64, modified: Int64, changed: Int64) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modified = modified
        self.changed = changed
    }

    /// The identity of what `lstat` says of a file.
    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
    }

    /// Whether `other` is the same file (device and inode), changed or not.
    public func isSameFile(as other: LocalFileIdentity) -> Bool {
        device == other.device && inode == other.inode
    }
}
