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
        /// The folders and packages that are there but could not be read (unreadable, a failing disk, no file
        /// descriptor left), with why. What is in them is not known — which is not the same as nothing being there —
        /// so a folder is reported as an item without what is below it, and a package not at all.
        public var unreadable: [ItemPath: String] = [:]

        /// Whether what a scan found at `path` is not known: `path` is below a folder or package that could not be
        /// read, or is such a package. Records at such paths are to be left as they are.
        public func isUnknown(_ path: ItemPath) -> Bool {
            guard !unreadable.isEmpty else { return false }
            if unreadable[path] != nil { return items[path]?.kind != .directory }
            return unreadable.keys.contains { path.string.hasPrefix($0.string + "/") }
        }
    }

    /// The types that tell packages from folders.
    public let types: DocumentTypeRegistry
    /// The disk scanned.
    public let disk: any LocalDisk

    /// Creates a scanner of `disk` (the machine's file system by default).
    public init(types: DocumentTypeRegistry = .default, disk: any LocalDisk = PosixDisk()) {
        self.types = types
        self.disk = disk
    }

    /// Scans `folder` (a container's folder). A folder or package below it that cannot be read is reported in
    /// ``Result/unreadable``.
    /// - Throws: The error of the container's own folder when it cannot be read (missing included).
    public func scan(_ folder: URL) throws -> Result {
        var result = Result()
        try walk(folder, relative: "", into: &result)
        return result
    }

    /// Scans one folder of the container (`relative` to `folder` as on disk, `""` for the container's own): its
    /// entries as items (a package whole, a folder as an item without what is in it), and the folders among them to
    /// scan in turn, each as on disk and as an item path, and the packages among them that could not be read. What
    /// ``scan(_:)`` finds is what this finds of every folder it reaches.
    /// - Throws: The error of the folder when it cannot be listed.
    public func scanFolder(_ folder: URL, relative: String) throws
        -> (entries: [ScannedItem], folders: [(relative: String, path: ItemPath)], unreadable: [ItemPath: String])
    {
        let directory = relative.isEmpty ? folder : folder.appendingPathComponent(relative, isDirectory: true)
        var entries: [ScannedItem] = []
        var folders: [(relative: String, path: ItemPath)] = []
        var unreadable: [ItemPath: String] = [:]
        for name in try disk.contentsOfDirectory(at: directory).sorted() {
            if relative.isEmpty && name == ItemPath.reservedFolderName { continue }
            if TemporaryFileName.isTemporary(name) { continue }  // a save under way: its result is what syncs
            let entry = relative.isEmpty ? name : relative + "/" + name
            var found = Result()
            add(
                directory.appendingPathComponent(name, isDirectory: false), relative: entry, into: &found,
                recursively: false)
            for item in found.items.values {
                entries.append(item)
                if item.kind == .directory { folders.append((entry, item.path)) }
            }
            unreadable.merge(found.unreadable) { _, later in later }
        }
        return (entries, folders, unreadable)
    }

    /// Scans only what is at `paths` (relative to `folder`, as file-system events name them): each path is looked
    /// at by itself — a folder found there is scanned whole, a path inside a package stands for the package, and a
    /// path with nothing there finds nothing (nor does a folder removed while it is walked). A folder or package
    /// that is there but cannot be read is reported in ``Result/unreadable``.
    public func scan(_ folder: URL, only paths: Set<String>) -> Result {
        var result = Result()
        for path in Set(paths.map(itemRoot)).sorted() where !path.isEmpty {
            if Self.isTemporary(path) { continue }
            add(folder.appendingPathComponent(path, isDirectory: false), relative: path, into: &result)
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

    private func walk(
        _ directory: URL, relative: String, into result: inout Result, recursively: Bool = true
    ) throws {
        for name in try disk.contentsOfDirectory(at: directory).sorted() {
            if relative.isEmpty && name == ItemPath.reservedFolderName { continue }
            if TemporaryFileName.isTemporary(name) { continue }  // a save under way: its result is what syncs
            add(
                directory.appendingPathComponent(name, isDirectory: false),
                relative: relative.isEmpty ? name : relative + "/" + name,
                into: &result, recursively: recursively)
        }
    }

    /// Reports what is at `url` (`relative` in the container), and what is below it when it is a folder; a folder
    /// or package there that cannot be read, in ``Result/unreadable``.
    private func add(_ url: URL, relative: String, into result: inout Result, recursively: Bool = true) {
        let found: FileIdentity
        do {
            guard let there = try disk.lookUp(url) else { return }  // gone since it was listed
            found = there
        } catch {
            // There or not, it cannot be looked at (below a folder whose permissions were taken away): not known.
            if let path = try? ItemPath(relative) { result.unreadable[path] = String(describing: error) }
            return
        }
        let type = found.mode & UInt32(S_IFMT)
        guard type == UInt32(S_IFREG) || type == UInt32(S_IFDIR) else {
            result.skipped[relative] =
                type == UInt32(S_IFLNK) ? "symbolic links are not synced" : "not a file or folder"
            return
        }
        let path: ItemPath
        do {
            path = try ItemPath(relative)
        } catch {
            result.skipped[relative] = error.message
            return
        }
        if type == UInt32(S_IFREG) {
            result.items[path] = ScannedItem(path: path, kind: .file, identity: found)
        } else if types.isPackageExtension((relative as NSString).pathExtension) {
            do {
                result.items[path] = ScannedItem(path: path, kind: .package, identity: try packageIdentity(url, found))
            } catch {
                // Removed while it was read: nothing is here, as a scan after would find.
                if disk.exists(url) { result.unreadable[path] = String(describing: error) }
            }
        } else {
            result.items[path] = ScannedItem(path: path, kind: .directory, identity: found)
            guard recursively else { return }
            do {
                try walk(url, relative: relative, into: &result)
            } catch {
                // Only its own listing throws (what is below reports itself): nothing below it is known.
                let below = path.string + "/"
                result.items = result.items.filter { !$0.key.string.hasPrefix(below) }
                result.unreadable = result.unreadable.filter { !$0.key.string.hasPrefix(below) }
                if !disk.exists(url) {
                    result.items[path] = nil  // removed while it was walked, as a scan after would find
                } else {
                    result.unreadable[path] = String(describing: error)
                }
            }
        }
    }

    /// The identity of the item at `url` as a scan would report it.
    /// - Throws: `ENOENT` when nothing is there.
    public func identity(of url: URL, kind: ItemKind) throws -> LocalFileIdentity {
        guard let found = try disk.lookUp(url) else { throw POSIXError(.ENOENT) }
        return kind == .package ? try packageIdentity(url, found) : found
    }

    /// A package's identity: its folder's device and inode, its members' total size, and the latest modification
    /// and status change of the folder and every member — so any change inside shows.
    private func packageIdentity(_ url: URL, _ folder: LocalFileIdentity) throws -> LocalFileIdentity {
        var identity = folder
        identity.size = 0
        for member in try disk.subpaths(of: url) where !Self.isTemporary(member) {
            guard let found = try disk.lookUp(url.appendingPathComponent(member, isDirectory: false)) else { continue }
            if found.mode & UInt32(S_IFMT) == UInt32(S_IFREG) { identity.size += found.size }
            identity.modified = max(identity.modified, found.modified)
            identity.changed = max(identity.changed, found.changed)
        }
        return identity
    }
}
