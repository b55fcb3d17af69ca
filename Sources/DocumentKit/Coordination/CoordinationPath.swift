import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Canonical paths and lock keys: the names under which coordinators in every process agree an item is locked.
enum CoordinationPath {
    /// The canonical path of `url`: standardized, with symbolic links in its ancestors resolved where they exist (and
    /// the item's own link too when `resolvingItem`), no trailing slash.
    static func canonical(_ url: URL, resolvingItem: Bool = false) throws(FileCoordinationError) -> String {
        guard url.isFileURL else {
            throw FileCoordinationError(.invalidURL, "\(url.absoluteString) is not a file URL")
        }
        let path = trimmed(url.standardizedFileURL.path)
        guard path.hasPrefix("/") else {
            throw FileCoordinationError(.invalidURL, "\(path) is not an absolute path")
        }
        return canonical(path: path, resolvingItem: resolvingItem)
    }

    /// ``canonical(_:resolvingItem:)`` for an absolute, standardized path.
    static func canonical(path: String, resolvingItem: Bool = false) -> String {
        if path == "/" { return "/" }
        if resolvingItem, let resolved = realPath(path) { return resolved }
        // Resolve the deepest existing ancestor, then append the components that do not exist (yet).
        var head = parent(of: path)
        var tail = [lastComponent(of: path)]
        while true {
            if let resolved = realPath(head) {
                return tail.reversed().reduce(resolved) { appending($1, to: $0) }
            }
            if head == "/" { return path }
            tail.append(lastComponent(of: head))
            head = parent(of: head)
        }
    }

    /// The lock key of a canonical path: the outermost package containing it, or the path itself.
    static func lockKey(forCanonical path: String) -> String {
        DocumentTypeRegistry.default.packageRoot(containingPath: path) ?? path
    }

    /// `/`, `/a`, `/a/b` for `/a/b/c`: every ancestor directory of `path`, outermost first.
    static func ancestors(of path: String) -> [String] {
        var result: [String] = []
        var current = path
        while current != "/" {
            current = parent(of: current)
            result.append(current)
        }
        return result.reversed()
    }

    /// Whether `ancestor` is a strict ancestor of `path`.
    static func isAncestor(_ ancestor: String, of path: String) -> Bool {
        guard path.count > ancestor.count, path.hasPrefix(ancestor) else { return false }
        if ancestor == "/" { return true }
        return path.utf8[path.utf8.index(path.utf8.startIndex, offsetBy: ancestor.utf8.count)] == UInt8(ascii: "/")
    }

    /// `path` with its prefix `oldBase` replaced by `newBase` (`path` is `oldBase` or inside it).
    static func rebase(_ path: String, from oldBase: String, to newBase: String) -> String {
        if path == oldBase { return newBase }
        return appending(String(path.dropFirst(oldBase.count + (oldBase == "/" ? 0 : 1))), to: newBase)
    }

    /// The name of the lock file of `key`: 16 lowercase hex digits of the key's 64-bit FNV-1a hash.
    static func lockFileName(forKey key: String) -> String {
        let hex = String(fnv1a(key.utf8), radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The 64-bit FNV-1a hash of `bytes`, continuing from `hash`.
    static func fnv1a<S: Sequence<UInt8>>(_ bytes: S, continuing hash: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
        var hash = hash
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    static func lastComponent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    static func appending(_ component: String, to path: String) -> String {
        path == "/" ? "/" + component : path + "/" + component
    }

    private static func trimmed(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
