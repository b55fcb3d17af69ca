import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What identifies one state of a file on disk: device, inode, size, and modification and
/// status-change times in nanoseconds.
///
/// Two equal identities taken at different moments mean, short of deliberate forgery, that nobody wrote
/// the file in between — with one exception ("racy" identities, see ``FileOrigin/isRacy``).
package struct FileIdentity: Hashable, Sendable {
    /// The device the file lives on.
    package var device: UInt64
    /// The inode number.
    package var inode: UInt64
    /// The size in bytes.
    package var size: Int64
    /// The modification time, in nanoseconds since 1970.
    package var modificationTime: Int64
    /// The status-change time, in nanoseconds since 1970; changes with contents, mode, owner and link count.
    package var changeTime: Int64

    /// The identity described by `status`.
    package init(_ status: stat) {
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
        size = Int64(status.st_size)
        modificationTime = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
        changeTime = Int64(status.st_ctim.tv_sec) * 1_000_000_000 + Int64(status.st_ctim.tv_nsec)
    }

    /// Whether `other` is the same file with the same contents, ignoring the status-change time
    /// (which `link(2)` changes).
    package func hasSameContents(as other: FileIdentity) -> Bool {
        device == other.device && inode == other.inode && size == other.size
            && modificationTime == other.modificationTime
    }

    /// The identity of the item at `path`, not following a final symbolic link; `nil` if it cannot be read
    /// or is not a regular file.
    package static func ofRegularFile(atPath path: String) -> FileIdentity? {
        var status = stat()
        guard lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        return FileIdentity(status)
    }
}

/// Where a regular-file wrapper's contents came from: the file it was read from or last written to,
/// and that file's identity at the time.
package struct FileOrigin: Sendable {
    /// How long after a file's modification time a modification could still leave the time unchanged;
    /// more than the timestamp granularity of Linux file systems (one scheduler tick, at most 10 ms).
    package static let timestampGranularity: Int64 = 50_000_000

    /// The file's location when the identity was recorded.
    package var url: URL
    /// The file's identity, taken when its contents were known to equal the wrapper's.
    package var identity: FileIdentity
    /// The wall-clock time, in nanoseconds since 1970, just before the identity was taken.
    package var recordedAt: Int64

    /// Whether the file was modified so shortly before its identity was taken that a later
    /// modification could have kept the same modification time (the "racily clean" case `git` knows).
    /// A racy origin is trusted only after comparing contents.
    package var isRacy: Bool {
        identity.modificationTime + Self.timestampGranularity >= recordedAt
    }
}
