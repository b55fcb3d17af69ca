import DocumentKit
import Foundation
import Synchronization

@testable import SyncEngine

/// The machine's file system, counting the listings of each folder; when told to, it refuses to replace an item, as
/// a full disk can, runs a test's own step before each listing, and treats one folder as one whose permissions were
/// taken away.
final class CountingDisk: LocalDisk {
    private let disk = PosixDisk()
    private let listings = Mutex<[String: Int]>([:])
    /// Whether ``replaceItem(at:withItemAt:)`` fails with `ENOSPC`.
    let refusesReplacing = Mutex(false)
    /// Runs before each listing of a folder; what it throws, the listing throws.
    let beforeListing = Mutex<(@Sendable (URL) throws -> Void)?>(nil)
    /// The path of a folder whose permissions were taken away (`chmod 000`, for anyone but root): it is there, but
    /// listing it fails with `EACCES`, and so does reaching anything below it (which looks absent to a `stat`).
    let unreachable = Mutex<String?>(nil)

    /// Throws `EACCES` for what `unreachable` keeps from being reached: below it, or (`itself`) it.
    private func reach(_ url: URL, itself: Bool = false) throws {
        guard let folder = unreachable.withLock({ $0 }) else { return }
        let path = url.standardizedFileURL.path
        if path.hasPrefix(folder + "/") || (itself && path == folder) { throw POSIXError(.EACCES) }
    }

    func listings(of url: URL) -> Int { listings.withLock { $0[url.standardizedFileURL.path, default: 0] } }

    func identity(at url: URL) -> FileIdentity? { (try? reach(url)) == nil ? nil : disk.identity(at: url) }
    func lookUp(_ url: URL) throws -> FileIdentity? {
        try reach(url)
        return try disk.lookUp(url)
    }
    func contentsOfDirectory(at url: URL) throws -> [String] {
        listings.withLock { $0[url.standardizedFileURL.path, default: 0] += 1 }
        try beforeListing.withLock { $0 }?(url)
        try reach(url, itself: true)
        return try disk.contentsOfDirectory(at: url)
    }
    func createDirectory(at url: URL) throws {
        try reach(url)
        try disk.createDirectory(at: url)
    }
    func removeItem(at url: URL) throws {
        try reach(url)
        try disk.removeItem(at: url)
    }
    func removeEmptyDirectory(at url: URL) -> Bool { (try? reach(url)) != nil && disk.removeEmptyDirectory(at: url) }
    func moveItem(at source: URL, to target: URL) throws {
        try reach(source)
        try reach(target)
        try disk.moveItem(at: source, to: target)
    }
    func replaceItem(at target: URL, withItemAt source: URL) throws {
        if refusesReplacing.withLock({ $0 }) { throw POSIXError(.ENOSPC) }
        try reach(source)
        try reach(target)
        try disk.replaceItem(at: target, withItemAt: source)
    }
    func setModificationTime(of url: URL, to nanoseconds: Int64) throws {
        try reach(url)
        try disk.setModificationTime(of: url, to: nanoseconds)
    }
    func openFile(at url: URL) throws -> any DiskFile {
        try reach(url)
        return try disk.openFile(at: url)
    }
    func openFileForReading(at url: URL) throws -> any DiskFile {
        try reach(url)
        return try disk.openFileForReading(at: url)
    }
    func chunksAndContentHash(ofFileAt url: URL, chunker: FileChunker) throws -> ChunkedContent {
        try reach(url)
        return try disk.chunksAndContentHash(ofFileAt: url, chunker: chunker)
    }
    var blocksThreads: Bool { disk.blocksThreads }
}
