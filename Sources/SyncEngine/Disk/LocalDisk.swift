import DocumentKit
import Foundation
import UbiquityProtocol

/// The file system as the engine uses it: every look at and change to a container's folder (its items, partial
/// downloads, version copies) goes through these few calls. ``PosixDisk`` is the real one; the engine's simulation
/// hands in a disk of its own (in memory, on a simulated clock), so the same scans, checks and coordinated writes
/// run against a simulated world.
///
/// What is decided stays in the engine: a disk only does what it is told, the way the system calls it stands for
/// do (`lstat`, `rename`, `rmdir`, `pread` …), and reports what it finds.
public protocol LocalDisk: Sendable {
    /// What is at `url` (a final symbolic link not followed), with its identity taken now; `nil` when nothing is,
    /// or when it cannot be looked at. The identity's ``FileIdentity/mode`` tells a file from a folder from anything
    /// else.
    func identity(at url: URL) -> FileIdentity?
    /// What is at `url`, as ``identity(at:)`` tells; `nil` only when the disk says nothing is there (`ENOENT`,
    /// `ENOTDIR`).
    /// - Throws: What keeps it from being looked at (`EACCES` below a folder whose permissions were taken away,
    ///   `EIO`): whether anything is there is not known, which is not the same as nothing being there.
    func lookUp(_ url: URL) throws -> FileIdentity?
    /// The names in the folder at `url`, in no particular order.
    func contentsOfDirectory(at url: URL) throws -> [String]
    /// Makes the folder at `url` and any missing parent; nothing when it exists.
    func createDirectory(at url: URL) throws
    /// Removes the file or folder at `url`, and everything inside it.
    func removeItem(at url: URL) throws
    /// Removes the folder at `url` if it is empty (`rmdir`). Returns `false` when something is inside it; `true` when
    /// it was removed or nothing was there.
    func removeEmptyDirectory(at url: URL) -> Bool
    /// Moves the item at `source` to `target`, which must not exist.
    func moveItem(at source: URL, to target: URL) throws
    /// Puts the item at `source` in the place of `target` in one step (`rename`): a file there is replaced.
    func replaceItem(at target: URL, withItemAt source: URL) throws
    /// Sets the modification time of the file at `url` to `nanoseconds` since 1970 (`utimensat`); its status-change
    /// time becomes now.
    func setModificationTime(of url: URL, to nanoseconds: Int64) throws
    /// Opens the file at `url` for reading and writing, creating it empty when missing.
    func openFile(at url: URL) throws -> any DiskFile
    /// Opens the file at `url` for reading.
    func openFileForReading(at url: URL) throws -> any DiskFile
    /// Chunks the file at `url` and hashes its content in the same pass.
    func chunksAndContentHash(ofFileAt url: URL, chunker: FileChunker) throws -> ChunkedContent
    /// The same, handing each chunk and its offset to `onChunk` as it is cut (a disk that reads all at once may
    /// hand them over at the end).
    func chunksAndContentHash(
        ofFileAt url: URL, chunker: FileChunker, onChunk: (ChunkReference, Int64) throws -> Void
    ) throws -> ChunkedContent
    /// Whether work on this disk blocks a thread long enough to be moved off Swift concurrency's shared threads
    /// (a real disk); a disk in memory answers at once and is used in place.
    var blocksThreads: Bool { get }
    /// Called first inside each coordinated access the engine takes of its items: a disk may refuse it, as a
    /// coordination fails (its locks not had in time, a presenter's save failing), and the access then throws before
    /// anything is looked at. The real disk lets every access through; the engine's simulation refuses some.
    func coordinationBegins() throws
}

extension LocalDisk {
    /// Lets every coordinated access through.
    public func coordinationBegins() throws {}

    /// Chunks the whole file, then hands each chunk over in order.
    public func chunksAndContentHash(
        ofFileAt url: URL, chunker: FileChunker, onChunk: (ChunkReference, Int64) throws -> Void
    ) throws -> ChunkedContent {
        let content = try chunksAndContentHash(ofFileAt: url, chunker: chunker)
        var offset: Int64 = 0
        for chunk in content.chunks {
            try onChunk(chunk, offset)
            offset += chunk.size
        }
        return content
    }
}

/// An open file of a ``LocalDisk``; closed when let go.
public protocol DiskFile: AnyObject {
    /// `count` bytes from `offset`, or `nil` when the file holds fewer.
    func read(at offset: Int64, count: Int) -> Data?
    /// Writes `data` at `offset`.
    func write(_ data: Data, at offset: Int64) throws
    /// Cuts or extends the file to `size` bytes.
    func truncate(to size: Int64) throws
    /// Makes what was written durable (`fsync`).
    func synchronize() throws
    /// Starts writing what was written to disk, without waiting for it: a later ``synchronize()`` finds less to do.
    /// A hint; nothing is promised until ``synchronize()`` returns.
    func startWriting()
}

extension DiskFile {
    /// Does nothing: a disk whose files have no cheaper way to start writing waits for ``synchronize()``.
    public func startWriting() {}
}

extension LocalDisk {
    /// Whether anything is at `url`, or may be: only what the disk says is not there (``lookUp(_:)``) is not. A
    /// path that cannot be looked at is not taken for gone.
    func exists(_ url: URL) -> Bool {
        do {
            return try lookUp(url) != nil
        } catch {
            return true
        }
    }

    /// Whether a folder is at `url`.
    func isDirectory(_ url: URL) -> Bool { identity(at: url)?.isDirectory == true }

    /// Every path below the folder at `url`, relative to it, depth first in name order: what a walk of a package
    /// finds. A folder removed while it is walked has nothing in it.
    /// - Throws: The error of a folder that is there but cannot be listed: a package read without it would lack its
    ///   members, and go up so.
    func subpaths(of url: URL) throws -> [String] {
        var found: [String] = []
        func walk(_ folder: URL, _ relative: String) throws {
            let names: [String]
            do {
                names = try contentsOfDirectory(at: folder)
            } catch  where !exists(folder) {
                return
            }
            for name in names.sorted() {
                let path = relative.isEmpty ? name : relative + "/" + name
                found.append(path)
                let member = folder.appendingPathComponent(name, isDirectory: false)
                if isDirectory(member) { try walk(member, path) }
            }
        }
        try walk(url, "")
        return found
    }
}
