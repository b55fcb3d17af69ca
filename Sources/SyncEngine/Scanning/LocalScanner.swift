import DocumentKit
import Foundation
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One item found on disk by a scan.
public struct ScannedItem: Hashable, Sendable {
    /// Where it is in the container.
    public var path: ItemPath
    /// File, package (a folder of a package type, scanned as one item) or directory.
    public var kind: ItemKind
    /// Its identity; for a package, the folder's device and inode with the members' total size and latest times.
    public var identity: LocalFileIdentity

    /// Creates a scanned item.
    public init(path: ItemPath, kind: ItemKind, identity: LocalFileIdentity) {
        self.path = path
        self.kind = kind
        self.identity = identity
    }
}

/// Walks a container's folder (everything but `.ubiquity/`) and reports every item with its identity, reading no
/// file's content: what the start-up scan compares against the state database.
///
/// Names that cannot be item paths (control characters, over-long names) and symbolic links are not synced; they
/// are reported in ``Result/skipped`` with the reason.
public struct LocalScanner: Sendable {
    /// A scan's findings.
    public struct Result: Hashable, Sendable {
        /// The items, by path.
        public var items: [ItemPath: ScannedItem] = [:]
        /// What was left out, with why (relative paths as found on disk).
        public var skipped: [String: String] = [:]
    }

    /// The types that tell packages from folders.
    public let types: DocumentTypeRegistry

    /// Creates a scanner.
    public init(types: DocumentTypeRegistry = .default) { self.types = types }

    /// Scans `folder` (a container's folder).
    /// - Throws: The error of a folder that cannot be read (the container's own folder missing included).
    public func scan(_ folder: URL) throws -> Result {
        var result = Result()
        try walk(folder.path, relative: "", into: &result)
        return result
    }

    /// Scans only what is at `paths` (relative to `folder`, as file-system events name them): each path is looked
    /// at by itself — a folder found there is scanned whole, a path inside a package stands for the package, and a
    /// path with nothing there finds nothing.
    public func scan(_ folder: URL, only paths: Set<String>) -> Result {
        var result = Result()
        for path in Set(paths.map(itemRoot)).sorted() where !path.isEmpty {
            if Self.isTemporary(path) { continue }
            let full = folder.path + "/" + path
            var info = stat()
            guard lstat(full, &info) == 0 else { continue }
            let type = info.st_mode & S_IFMT
            guard type == S_IFREG || type == S_IFDIR else {
                result.skipped[path] = type == S_IFLNK ? "symbolic links are not synced" : "not a file or folder"
                continue
            }
            guard let itemPath = try? ItemPath(path) else {
                result.skipped[path] = "not a valid item path"
                continue
            }
            if type == S_IFREG {
                result.items[itemPath] = ScannedItem(path: itemPath, kind: .file, identity: LocalFileIdentity(info))
            } else if types.isPackageExtension((path as NSString).pathExtension) {
                result.items[itemPath] = ScannedItem(
                    path: itemPath, kind: .package, identity: packageIdentity(full, info))
            } else {
                result.items[itemPath] = ScannedItem(
                    path: itemPath, kind: .directory, identity: LocalFileIdentity(info))
                try? walk(full, relative: path, into: &result)
            }
        }
        return result
    }

    /// Whether a relative path is, or is inside, a save's temporary file or folder (``TemporaryFileName``): never an
    /// item, nor a package's member.
    static func isTemporary(_ path: String) -> Bool {
        path.split(separator: "/").contains { TemporaryFileName.isTemporary($0) }
    }

    /// The item a relative path belongs to: the path itself, or the package it is inside; `""` for the container's
    /// own folder and anything in the private folder.
    public func itemRoot(of path: String) -> String {
        var components: [Substring] = []
        for component in path.split(separator: "/") {
            if components.isEmpty && component == ItemPath.reservedFolderName { return "" }
            components.append(component)
            if types.isPackageExtension((String(component) as NSString).pathExtension) { break }
        }
        return components.joined(separator: "/")
    }

    private func walk(_ directory: String, relative: String, into result: inout Result) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: directory).sorted() {
            if relative.isEmpty && name == ItemPath.reservedFolderName { continue }
            if TemporaryFileName.isTemporary(name) { continue }  // a save under way: its result is what syncs
            let full = directory + "/" + name
            let relativePath = relative.isEmpty ? name : relative + "/" + name
            var info = stat()
            guard lstat(full, &info) == 0 else { continue }  // gone since it was listed
            let type = info.st_mode & S_IFMT
            guard type == S_IFREG || type == S_IFDIR else {
                result.skipped[relativePath] =
                    type == S_IFLNK ? "symbolic links are not synced" : "not a file or folder"
                continue
            }
            let path: ItemPath
            do {
                path = try ItemPath(relativePath)
            } catch {
                result.skipped[relativePath] = error.message
                continue
            }
            if type == S_IFREG {
                result.items[path] = ScannedItem(path: path, kind: .file, identity: LocalFileIdentity(info))
            } else if types.isPackageExtension((name as NSString).pathExtension) {
                result.items[path] = ScannedItem(path: path, kind: .package, identity: packageIdentity(full, info))
            } else {
                result.items[path] = ScannedItem(path: path, kind: .directory, identity: LocalFileIdentity(info))
                try walk(full, relative: relativePath, into: &result)
            }
        }
    }

    /// The identity of the item at `url` as a scan would report it.
    public func identity(of url: URL, kind: ItemKind) throws -> LocalFileIdentity {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return kind == .package ? packageIdentity(url.path, info) : LocalFileIdentity(info)
    }

    /// A package's identity: its folder's device and inode, its members' total size, and the latest modification
    /// and status change of the folder and every member — so any change inside shows.
    private func packageIdentity(_ path: String, _ info: stat) -> LocalFileIdentity {
        var identity = LocalFileIdentity(info)
        identity.size = 0
        guard let members = FileManager.default.enumerator(atPath: path) else { return identity }
        while let member = members.nextObject() as? String {
            if Self.isTemporary(member) { continue }
            var memberInfo = stat()
            guard lstat(path + "/" + member, &memberInfo) == 0 else { continue }
            let memberIdentity = LocalFileIdentity(memberInfo)
            if memberInfo.st_mode & S_IFMT == S_IFREG { identity.size += memberIdentity.size }
            identity.modified = max(identity.modified, memberIdentity.modified)
            identity.changed = max(identity.changed, memberIdentity.changed)
        }
        return identity
    }
}
