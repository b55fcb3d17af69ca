import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What an item on disk looked like when a presenter last heard of it: device, inode, size and the modification and
/// status-change times in nanoseconds — and, for a package, a hash of the same facts of everything inside it.
///
/// A change notice is delivered only when the identity differs from the recorded one, which is how a process does
/// not hear its own coordinated writes a second time through the file watcher.
struct ItemIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: Int64
    var changed: Int64
    var isDirectory: Bool
    /// For packages: a hash over the relative path and identity of every item inside; 0 otherwise.
    var contentsHash: UInt64 = 0

    /// The identity of the item at `path` (not following a final symbolic link); `nil` if there is none. A directory
    /// that is a package gets ``contentsHash``.
    static func of(path: String) -> ItemIdentity? {
        guard var identity = stat(path) else { return nil }
        if identity.isDirectory && DocumentTypeRegistry.default.isPackageExtension((path as NSString).pathExtension) {
            identity.contentsHash = contentsHash(of: path)
        }
        return identity
    }

    private static func stat(_ path: String) -> ItemIdentity? {
        var info = Glibc.stat()
        guard lstat(path, &info) == 0 else { return nil }
        return ItemIdentity(
            device: UInt64(info.st_dev),
            inode: UInt64(info.st_ino),
            size: Int64(info.st_size),
            modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
            changed: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec),
            isDirectory: (info.st_mode & S_IFMT) == S_IFDIR
        )
    }

    private static func contentsHash(of directory: String) -> UInt64 {
        let subpaths = ((try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? []).sorted()
        var hash = CoordinationPath.fnv1a([])
        for subpath in subpaths {
            hash = CoordinationPath.fnv1a(subpath.utf8, continuing: hash)
            guard let item = stat(directory + "/" + subpath) else { continue }
            for field in [
                item.device, item.inode, UInt64(bitPattern: item.size), UInt64(bitPattern: item.modified),
                UInt64(bitPattern: item.changed),
            ] {
                hash = CoordinationPath.fnv1a(withUnsafeBytes(of: field) { Array($0) }, continuing: hash)
            }
        }
        return hash
    }
}
