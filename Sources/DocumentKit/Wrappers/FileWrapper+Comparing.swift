import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension FileWrapper {
    /// Implements ``matchesContents(of:)``.
    func contentsMatch(_ url: URL) -> Bool {
        guard let node = try? Self.readNode(at: url.standardizedFileURL) else { return false }
        return matches(storage: node.storage)
    }

    /// Implements ``needsToBeUpdated(from:)``.
    func isOutdated(comparedWith url: URL) -> Bool {
        let url = url.standardizedFileURL
        guard let status = try? POSIX.lstatus(url) else { return true }
        switch storage {
        case .regularFile:
            guard status.st_mode & S_IFMT == S_IFREG, let origin else { return true }
            return FileIdentity(status) != origin.identity
        case .symbolicLink(let destination):
            guard status.st_mode & S_IFMT == S_IFLNK else { return true }
            guard let node = try? Self.readNode(at: url), case .symbolicLink(let onDisk) = node.storage else {
                return true
            }
            return onDisk != destination
        case .directory(let children):
            guard status.st_mode & S_IFMT == S_IFDIR,
                let names = try? FileManager.default.contentsOfDirectory(atPath: url.path),
                Set(names) == Set(children.keys)
            else { return true }
            return children.contains {
                $0.value.needsToBeUpdated(from: url.appendingPathComponent($0.key, isDirectory: false))
            }
        }
    }

    /// Whether this wrapper's contents equal `other`, read from disk.
    private func matches(storage other: Storage) -> Bool {
        switch (storage, other) {
        case (.regularFile(let mine), .regularFile(let theirs)):
            return mine == theirs
        case (.symbolicLink(let mine), .symbolicLink(let theirs)):
            return mine == theirs
        case (.directory(let mine), .directory(let theirs)):
            guard Set(mine.keys) == Set(theirs.keys) else { return false }
            return mine.allSatisfy { key, child in theirs[key].map { child.matches(storage: $0.storage) } ?? false }
        default:
            return false
        }
    }
}
