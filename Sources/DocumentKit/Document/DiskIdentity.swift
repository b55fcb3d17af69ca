import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What a document knows of its item on disk, to tell another writer's change from its own: device, inode, size and
/// the modification and status-change times in nanoseconds of the item — and, for a directory (a package), of every
/// item inside it. Any write, rename over, permission change or member edit changes it; so do writes in the same
/// clock tick and writers that restore the modification time (the status-change time cannot be set).
struct DiskIdentity: Sendable, Hashable {
    private var digest: UInt64
    /// The item's modification time.
    let modificationDate: Date

    /// The identity of the item at `url` now; `nil` if nothing is there.
    static func of(_ url: URL) -> DiskIdentity? {
        var status = stat()
        guard lstat(url.path, &status) == 0 else { return nil }
        var hasher = FNV1a()
        hasher.add(status)
        if status.st_mode & S_IFMT == S_IFDIR { addMembers(of: url.path, to: &hasher) }
        let time = status.st_mtim
        let date = Date(timeIntervalSince1970: TimeInterval(time.tv_sec) + TimeInterval(time.tv_nsec) / 1e9)
        return DiskIdentity(digest: hasher.value, modificationDate: date)
    }

    private static func addMembers(of directory: String, to hasher: inout FNV1a) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names.sorted() {
            let path = directory + "/" + name
            var status = stat()
            guard lstat(path, &status) == 0 else { continue }
            hasher.add(name)
            hasher.add(status)
            if status.st_mode & S_IFMT == S_IFDIR { addMembers(of: path, to: &hasher) }
        }
    }
}

/// 64-bit FNV-1a, enough to tell one set of file statuses from another.
private struct FNV1a {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func add(_ number: some FixedWidthInteger) {
        withUnsafeBytes(of: number.littleEndian) { bytes in
            for byte in bytes {
                value ^= UInt64(byte)
                value &*= 0x0000_0100_0000_01b3
            }
        }
    }

    mutating func add(_ text: String) {
        for byte in text.utf8 { add(byte) }
        add(UInt8(0))
    }

    mutating func add(_ status: stat) {
        add(UInt64(status.st_dev))
        add(UInt64(status.st_ino))
        add(UInt64(status.st_mode))
        add(Int64(status.st_size))
        add(Int64(status.st_mtim.tv_sec))
        add(Int64(status.st_mtim.tv_nsec))
        add(Int64(status.st_ctim.tv_sec))
        add(Int64(status.st_ctim.tv_nsec))
    }
}
