import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What identifies one state of an item on disk without reading it: device, inode, size, mode, and the modification
/// and status-change times in nanoseconds — and, for a folder whose members count (a package, a document's folder),
/// a hash of the same facts of everything inside it (``members``). The one identity type of documents, presenters
/// and the sync engine.
///
/// **The one rule.** A file is unchanged since an identity was recorded when it is the same file (device and inode)
/// with the same size, modification time and members (``isUnchanged(since:)``): the status-change time and the mode
/// are left out (a rename or a hard link changes the first, a permission change the second, the contents stay).
///
/// **Racy identities.** File times advance in clock ticks, so a write made in the same tick as the one an identity
/// was taken in, keeping the size, leaves the identity unchanged. An identity taken less than ``racyInterval``
/// after its modification time is therefore racy (``isRacy``): whoever must know the contents compares them too.
/// ``capturedAt`` is not part of equality.
public struct FileIdentity: Hashable, Sendable, Codable {
    /// How close to its modification time an identity must be taken to be racy: 2 s, the coarsest file-system time
    /// granularity in common use.
    public static let racyInterval: Int64 = 2_000_000_000
    /// The file system's device number.
    public var device: UInt64
    /// The inode number.
    public var inode: UInt64
    /// The size in bytes (for a package as the sync engine scans it, its members' total).
    public var size: Int64
    /// The modification time, in nanoseconds since 1970.
    public var modified: Int64
    /// The status-change time, in nanoseconds since 1970; changes with contents, mode, owner and link count.
    public var changed: Int64
    /// When the identity was taken, in nanoseconds since 1970 (not part of equality).
    public var capturedAt: Int64 = 0
    /// The file type and permission bits (`st_mode`); 0 when not known.
    public var mode: UInt32 = 0
    /// For a folder whose members count: a hash over the relative path and identity of every item inside; 0
    /// otherwise.
    public var members: UInt64 = 0
    /// The birth time, in nanoseconds since 1970, where the file system keeps it and the identity was taken from
    /// the disk; 0 when not known. Not part of equality, and not kept when an identity is encoded: it tells a file
    /// from another given the same inode number later (``couldBeTheFileSeen(at:)``).
    public var born: Int64 = 0

    /// Whether a same-size write could have gone unseen (see the type's discussion).
    public var isRacy: Bool { capturedAt - modified < Self.racyInterval }

    /// Whether the item is a folder.
    public var isDirectory: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFDIR) }

    /// The modification time as a date.
    public var modificationDate: Date { Date(timeIntervalSince1970: Double(modified) / 1e9) }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.device == rhs.device && lhs.inode == rhs.inode && lhs.size == rhs.size && lhs.modified == rhs.modified
            && lhs.changed == rhs.changed && lhs.mode == rhs.mode && lhs.members == rhs.members
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(inode)
        hasher.combine(size)
        hasher.combine(modified)
    }

    /// Creates an identity.
    public init(device: UInt64, inode: UInt64, size: Int64, modified: Int64, changed: Int64) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modified = modified
        self.changed = changed
    }

    /// The identity of what `lstat` says of an item, taken now.
    package init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        mode = UInt32(info.st_mode)
        capturedAt = POSIX.now()
    }

    private enum CodingKeys: String, CodingKey {
        case device, inode, size, modified, changed, capturedAt, mode, members
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        device = try container.decode(UInt64.self, forKey: .device)
        inode = try container.decode(UInt64.self, forKey: .inode)
        size = try container.decode(Int64.self, forKey: .size)
        modified = try container.decode(Int64.self, forKey: .modified)
        changed = try container.decode(Int64.self, forKey: .changed)
        capturedAt = try container.decodeIfPresent(Int64.self, forKey: .capturedAt) ?? 0
        mode = try container.decodeIfPresent(UInt32.self, forKey: .mode) ?? 0
        members = try container.decodeIfPresent(UInt64.self, forKey: .members) ?? 0
    }

    /// Whether the item is the one `recorded` describes, unchanged since (see the type's discussion). A racy
    /// recorded identity is not enough alone where losing an edit is at stake: compare the contents too.
    public func isUnchanged(since recorded: FileIdentity) -> Bool {
        isSameFile(as: recorded) && size == recorded.size && modified == recorded.modified
            && members == recorded.members
    }

    /// Whether `other` is the same file (device and inode), changed or not.
    public func isSameFile(as other: FileIdentity) -> Bool {
        device == other.device && inode == other.inode
    }

    /// Whether this file could be the one with its device and inode seen at `time` (nanoseconds since 1970, 0 for
    /// not known): not born after it. A file system gives a freed inode number out again (ext4 and xfs at once), so
    /// a file born since is another one with the number of a file removed meanwhile. Birth times come from the file
    /// system's coarse clock: a file born within a clock tick after `time` passes for the one seen.
    public func couldBeTheFileSeen(at time: Int64) -> Bool {
        born == 0 || time == 0 || born <= time
    }

    /// The identity of the item at `path` now, not following a final symbolic link; `nil` if nothing is there. With
    /// `members`, a folder's identity includes a hash of everything inside it.
    package static func of(path: String, members: Bool = false) -> FileIdentity? {
        (try? lookUp(path: path, members: members)) ?? nil
    }

    /// The identity of the item at `path` as ``of(path:members:)`` reads it; `nil` when nothing is there (`ENOENT`,
    /// `ENOTDIR`).
    /// - Throws: What kept it from being looked at (`EACCES` below a folder whose permissions were taken away,
    ///   `EIO`, …): whether anything is there is not known.
    package static func lookUp(path: String, members: Bool = false) throws(POSIXError) -> FileIdentity? {
        guard let status = try FileStatus.lookUp(path: path) else { return nil }
        var identity = FileIdentity(
            device: status.device, inode: status.inode, size: status.size, modified: status.modified,
            changed: status.changed)
        identity.mode = status.mode
        identity.born = status.born ?? 0
        identity.capturedAt = POSIX.now()
        if members, identity.isDirectory { identity.members = membersHash(of: path) }
        return identity
    }

    /// The identity of the regular file at `path`; `nil` if it cannot be read or is not a regular file.
    package static func ofRegularFile(atPath path: String) -> FileIdentity? {
        guard let identity = of(path: path), identity.mode & UInt32(S_IFMT) == UInt32(S_IFREG) else { return nil }
        return identity
    }

    /// A hash over the relative path and identity of every item inside the folder at `directory`.
    private static func membersHash(of directory: String) -> UInt64 {
        let subpaths = ((try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? []).sorted()
        var hash = CoordinationPath.fnv1a([])
        for subpath in subpaths {
            hash = CoordinationPath.fnv1a(subpath.utf8, continuing: hash)
            var info = stat()
            guard lstat(directory + "/" + subpath, &info) == 0 else { continue }
            let item = FileIdentity(info)
            for field in [
                item.device, item.inode, UInt64(bitPattern: item.size), UInt64(bitPattern: item.modified),
                UInt64(bitPattern: item.changed), UInt64(item.mode),
            ] {
                hash = CoordinationPath.fnv1a(withUnsafeBytes(of: field) { Array($0) }, continuing: hash)
            }
        }
        return hash
    }
}

/// Where a regular-file wrapper's contents came from: the file it was read from or last written to,
/// and that file's identity at the time.
package struct FileOrigin: Sendable {
    /// The file's location when the identity was recorded.
    package var url: URL
    /// The file's identity, taken when its contents were known to equal the wrapper's.
    package var identity: FileIdentity
    /// The wall-clock time, in nanoseconds since 1970, just before the identity was taken.
    package var recordedAt: Int64

    /// Whether the file was modified so shortly before its identity was taken that a later modification could have
    /// kept the same modification time (the "racily clean" case `git` knows; ``FileIdentity/racyInterval``). A racy
    /// origin is trusted only after comparing contents.
    package var isRacy: Bool {
        recordedAt - identity.modified < FileIdentity.racyInterval
    }
}
