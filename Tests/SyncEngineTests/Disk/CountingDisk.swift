import DocumentKit
import Foundation
import Synchronization

@testable import SyncEngine

/// The machine's file system, counting the listings of each folder; when told to, it refuses to replace an item, as
/// a full disk can, and runs a test's own step before each listing.
final class CountingDisk: LocalDisk {
    private let disk = PosixDisk()
    private let listings = Mutex<[String: Int]>([:])
    /// Whether ``replaceItem(at:withItemAt:)`` fails with `ENOSPC`.
    let refusesReplacing = Mutex(false)
    /// Runs before each listing of a folder; what it throws, the listing throws.
    let beforeListing = Mutex<(@Sendable (URL) throws -> Void)?>(nil)

    func listings(of url: URL) -> Int { listings.withLock { $0[url.standardizedFileURL.path, default: 0] } }

    func identity(at url: URL) -> FileIdentity? { disk.identity(at: url) }
    func contentsOfDirectory(at url: URL) throws -> [String] {
        listings.withLock { $0[url.standardizedFileURL.path, default: 0] += 1 }
        try beforeListing.withLock { $0 }?(url)
        return try disk.contentsOfDirectory(at: url)
    }
    func createDirectory(at url: URL) throws { try disk.createDirectory(at: url) }
    func removeItem(at url: URL) throws { try disk.removeItem(at: url) }
    func removeEmptyDirectory(at url: URL) -> Bool { disk.removeEmptyDirectory(at: url) }
    func moveItem(at source: URL, to target: URL) throws { try disk.moveItem(at: source, to: target) }
    func replaceItem(at target: URL, withItemAt source: URL) throws {
        if refusesReplacing.withLock({ $0 }) { throw POSIXError(.ENOSPC) }
        try disk.replaceItem(at: target, withItemAt: source)
    }
    func setModificationTime(of url: URL, to nanoseconds: Int64) throws {
        try disk.setModificationTime(of: url, to: nanoseconds)
    }
    func openFile(at url: URL) throws -> any DiskFile { try disk.openFile(at: url) }
    func openFileForReading(at url: URL) throws -> any DiskFile { try disk.openFileForReading(at: url) }
    func chunksAndContentHash(ofFileAt url: URL, chunker: FileChunker) throws -> ChunkedContent {
        try disk.chunksAndContentHash(ofFileAt: url, chunker: chunker)
    }
    var blocksThreads: Bool { disk.blocksThreads }
}
