#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the scanner compares to tell whether a file changed without reading it: device, inode, size, and the
/// modification and status-change times in nanoseconds. Equal identities mean "unchanged"; the same device and
/// inode at another path mean "moved".
///
/// **Racy identities.** File times advance in clock ticks, so a write made in the same tick as the one an identity
/// was taken in, keeping the size, leaves the identity unchanged. An identity taken less than
/// ``racyInterval`` after its modification time is therefore not trusted: the next scan checks the content
/// (``isRacy``). ``capturedAt`` is not part of equality.
public struct LocalFileIdentity: Hashable, Sendable, Codable {
    /// How close to its modification time an identity must be taken to be racy: 2 s, the coarsest file-system
    /// time granularity in common use.
    public static let racyInterval: Int64 = 2_000_000_000
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
    /// When the identity was taken, in nanoseconds since 1970 (0 when unknown).
    public var capturedAt: Int64 = 0

    /// Whether a same-size write could have gone unseen (see the type's discussion).
    public var isRacy: Bool { capturedAt - modified < Self.racyInterval }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.device == rhs.device && lhs.inode == rhs.inode && lhs.size == rhs.size && lhs.modified == rhs.modified
            && lhs.changed == rhs.changed
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

    /// The identity of what `lstat` says of a file.
    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        capturedAt = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    private enum CodingKeys: String, CodingKey { case device, inode, size, modified, changed, capturedAt }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        device = try container.decode(UInt64.self, forKey: .device)
        inode = try container.decode(UInt64.self, forKey: .inode)
        size = try container.decode(Int64.self, forKey: .size)
        modified = try container.decode(Int64.self, forKey: .modified)
        changed = try container.decode(Int64.self, forKey: .changed)
        capturedAt = try container.decodeIfPresent(Int64.self, forKey: .capturedAt) ?? 0
    }

    /// Whether the file is the one `recorded` describes, unchanged since: the same file (device and inode), the same
    /// size and modification time. The one rule the engine uses before it replaces, removes or evicts a local copy
    /// (inside the coordinated write that does it) and when it tells whether a local copy has edits of its own. The
    /// status-change time is left out (a rename changes it, the content stays). A ``isRacy`` recorded identity is
    /// not enough alone: callers check the content too where losing an edit is at stake.
    public func isUnchanged(since recorded: LocalFileIdentity) -> Bool {
        isSameFile(as: recorded) && size == recorded.size && modified == recorded.modified
    }

    /// Whether `other` is the same file (device and inode), changed or not.
    public func isSameFile(as other: LocalFileIdentity) -> Bool {
        device == other.device && inode == other.inode
    }
}
