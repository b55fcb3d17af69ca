import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Durable, crash-safe writing of files and directories.
///
/// The rule every helper follows: write the new item under a temporary name in the destination's
/// directory, `fsync(2)` every file and directory written, move it over the destination in one
/// `rename(2)` (or, for directories, one `renameat2(RENAME_EXCHANGE)`), then `fsync(2)` the directory.
/// A crash at any instant leaves either the old item or the new one at the destination, never a torn one.
///
/// ```swift
/// try SafeFileWriter.replaceItem(at: documentURL) { temporaryURL in
///     try SafeFileWriter.writeFile(contents, to: temporaryURL)
/// }
/// ```
package enum SafeFileWriter {
    /// Atomically replaces (or creates) the item at `destination` with the item `body` writes.
    ///
    /// `body` receives a location that does not exist yet — a hidden, uniquely named sibling of
    /// `destination` (`.<name>.<random>.tmp`) — and must create a file, directory or symbolic link there.
    /// Then, unless `synchronizesContents` is `false` (the body promises it synced everything itself),
    /// every file and directory under it is synced; the item is moved over `destination` and the directory
    /// is synced. If `destination` exists and either it or the new item is a directory, the two are
    /// exchanged with `renameat2(RENAME_EXCHANGE)` and the old item is then deleted; on file systems
    /// without exchange, the old item is first renamed aside, leaving a short window in which a crash
    /// leaves nothing at `destination` (the old item survives under its hidden temporary name).
    /// On any error the temporary item is deleted and `destination` is untouched.
    ///
    /// - Parameters:
    ///   - destination: The file URL to replace or create. Its directory must exist.
    ///   - synchronizesContents: Whether to `fsync` everything `body` wrote. Pass `false` only if `body`
    ///     already synced every file and directory it created.
    ///   - synchronizesDirectory: Whether to `fsync` the directory after the rename; `false` leaves making the
    ///     replacement durable to the caller, who must keep what it needs to write it again until it has.
    ///   - body: Writes the new item at the URL it is given.
    /// - Throws: ``FileWrapperError`` for failed system calls, and whatever `body` throws.
    package static func replaceItem(
        at destination: URL,
        synchronizesContents: Bool = true,
        synchronizesDirectory: Bool = true,
        writingWith body: (URL) throws -> Void
    ) throws {
        let destination = try checkedFileURL(destination)
        let directory = destination.deletingLastPathComponent()
        let temporary = temporarySibling(of: destination)
        do {
            try body(temporary)
            if synchronizesContents { try synchronizeTree(at: temporary) }
            try moveIntoPlace(temporary, over: destination)
        } catch {
            removeTree(at: temporary)
            throw error
        }
        if synchronizesDirectory { try synchronizeDirectory(at: directory) }
    }

    /// Creates the file `url` (which must not exist) with `contents`, syncs it, and returns its identity.
    ///
    /// - Parameters:
    ///   - contents: The bytes to write.
    ///   - url: Where to create the file.
    ///   - permissions: POSIX permissions to set exactly (not masked by the umask); `nil` for the default
    ///     `0o666` masked by the umask.
    ///   - modificationDate: The modification date to set, or `nil` to keep the time of writing.
    ///   - synchronizes: Whether to `fsync` the file; `false` leaves it to the caller.
    /// - Returns: The written file's identity, taken after syncing.
    /// - Throws: ``FileWrapperError`` with code `writeFailed`.
    @discardableResult
    package static func writeFile(
        _ contents: Data,
        to url: URL,
        permissions: mode_t? = nil,
        modificationDate: Date? = nil,
        synchronizes: Bool = true
    ) throws(FileWrapperError) -> FileIdentity {
        let descriptor = try POSIX.openFile(
            url,
            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
            mode: 0o666,
            failure: .writeFailed
        )
        defer { close(descriptor) }
        try POSIX.writeAll(contents, to: descriptor, url: url)
        if let permissions, fchmod(descriptor, permissions) != 0 {
            throw .posix(.writeFailed, "fchmod", url: url)
        }
        if let modificationDate {
            // UTIME_OMIT ((1 << 30) - 2, not imported into Swift) leaves the access time alone.
            var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2), timespec(modificationDate)]
            if futimens(descriptor, &times) != 0 { throw .posix(.writeFailed, "futimens", url: url) }
        }
        if synchronizes { try POSIX.sync(descriptor, url: url) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .posix(.writeFailed, "fstat", url: url) }
        return FileIdentity(status)
    }

    /// Syncs the file or directory at `url` (not following a final symbolic link, which needs no sync of
    /// its own beyond its directory's).
    ///
    /// - Throws: ``FileWrapperError`` with code `writeFailed`.
    package static func synchronizeItem(at url: URL) throws(FileWrapperError) {
        guard let status = try POSIX.lstatus(url) else {
            throw .posix(.writeFailed, "lstat", url: url, errno: ENOENT)
        }
        let type = status.st_mode & S_IFMT
        guard type == S_IFREG || type == S_IFDIR else { return }
        let flags = type == S_IFDIR ? O_RDONLY | O_DIRECTORY : O_RDONLY
        let descriptor = try POSIX.openFile(url, flags | O_NOFOLLOW | O_NONBLOCK, failure: .writeFailed)
        defer { close(descriptor) }
        try POSIX.sync(descriptor, url: url)
    }

    /// Syncs the directory at `url`, making the creation, renaming and removal of its entries durable.
    ///
    /// - Throws: ``FileWrapperError`` with code `writeFailed`.
    package static func synchronizeDirectory(at url: URL) throws(FileWrapperError) {
        let descriptor = try POSIX.openFile(url, O_RDONLY | O_DIRECTORY, failure: .writeFailed)
        defer { close(descriptor) }
        try POSIX.sync(descriptor, url: url)
    }

    /// Syncs every file and directory at and under `url`, children before their directory.
    ///
    /// - Throws: ``FileWrapperError`` with code `writeFailed`.
    package static func synchronizeTree(at url: URL) throws(FileWrapperError) {
        guard let status = try POSIX.lstatus(url) else {
            throw .posix(.writeFailed, "lstat", url: url, errno: ENOENT)
        }
        if status.st_mode & S_IFMT == S_IFDIR {
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: url.path)
            } catch {
                throw FileWrapperError(code: .writeFailed, message: "cannot list", url: url, underlyingError: error)
            }
            for name in names { try synchronizeTree(at: url.appendingPathComponent(name, isDirectory: false)) }
        }
        try synchronizeItem(at: url)
    }

    /// A hidden, unique, not yet existing location next to `destination`: `.<name>.<random>.tmp`.
    package static func temporarySibling(of destination: URL) -> URL {
        let name = String(destination.lastPathComponent.prefix(180))
        let random = UInt64.random(in: 0...UInt64.max)
        let hex = String(random, radix: 16)
        return destination.deletingLastPathComponent().appendingPathComponent(".\(name).\(hex).tmp", isDirectory: false)
    }

    /// Deletes the temporary siblings of `destination` that saves killed mid-way left behind. Call only while no
    /// save of `destination` can be running (inside a coordinated access to it); returns how many were removed.
    @discardableResult
    package static func removeStaleTemporarySiblings(of destination: URL) -> Int {
        let directory = destination.deletingLastPathComponent()
        let prefix = ".\(destination.lastPathComponent.prefix(180))."
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return 0 }
        var removed = 0
        for name in names where name.hasPrefix(prefix) && name.hasSuffix(".tmp") {
            let hex = name.dropFirst(prefix.count).dropLast(4)
            guard !hex.isEmpty, hex.allSatisfy(\.isHexDigit) else { continue }
            removeTree(at: directory.appendingPathComponent(name, isDirectory: false))
            removed += 1
        }
        return removed
    }

    /// Deletes the item at `url` and everything under it, ignoring errors; best-effort cleanup.
    package static func removeTree(at url: URL) {
        try? FileManager.default.removeItem(atPath: url.path)
    }

    /// `destination` made absolute and checked to name an item in some directory.
    static func checkedFileURL(_ url: URL) throws(FileWrapperError) -> URL {
        let url = url.standardizedFileURL
        let name = url.lastPathComponent
        guard url.isFileURL, url.path != "/", name != "/", !name.isEmpty, name != ".", name != ".." else {
            throw FileWrapperError(code: .invalidURL, message: "not a file URL naming an item", url: url)
        }
        return url
    }
}

extension timespec {
    /// The time `date` as a `timespec`.
    init(_ date: Date) {
        let interval = date.timeIntervalSince1970
        var seconds = interval.rounded(.down)
        var nanoseconds = ((interval - seconds) * 1_000_000_000).rounded()
        if nanoseconds >= 1_000_000_000 {
            seconds += 1
            nanoseconds -= 1_000_000_000
        }
        self.init(tv_sec: Int(seconds), tv_nsec: Int(nanoseconds))
    }
}
