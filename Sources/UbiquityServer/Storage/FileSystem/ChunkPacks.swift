import Foundation
import GRDB
import Synchronization
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Small chunks packed into large append-only files, `<folder>/<number>.pack`, with an index of where each chunk is
/// (`<folder>/index.sqlite`, keyed by account and hash).
///
/// A file per chunk costs a new inode, a flush of the file and one of its folder for every 72 KiB; here a batch of
/// chunks is written into the pack being filled at offsets reserved for it, flushed once, and indexed in one
/// transaction. A pack a write or flush failed on takes no more chunks, and nothing written to it before a failed
/// flush is indexed after (the kernel reports a failed writeback to one flush only). A chunk is
/// indexed only after its bytes were flushed, so after any crash every indexed chunk is whole; what a crash leaves
/// past the last indexed chunk of a pack is never read. A pack is appended to only by the process that created it,
/// and a new one is begun at each start and whenever the current one is full.
final class ChunkPacks: Sendable {
    /// Where a packed chunk lies.
    struct Location: Sendable, Equatable {
        let pack: Int64
        let offset: Int64
        let length: Int64
    }

    /// The size past which a pack takes no more chunks (unless it is empty).
    let packLimit: Int64
    /// How many packs are kept open for reading at most.
    static let openForReading = 64

    let folder: URL
    private let index: DatabasePool
    private let writer = Mutex<(pack: PackFile, size: Int64)?>(nil)
    private let readers = Mutex<[Int64: PackFile]>([:])
    /// Locations looked up or indexed lately (a download asks whether a chunk is there, then reads it): a chunk
    /// never moves once indexed. Emptied when full.
    private let recent = Mutex<[ChunkKey: Location]>([:])
    private static let recentLimit = 8_192

    private struct ChunkKey: Hashable {
        let account: AccountID
        let hash: ChunkHash
    }

    /// Opens (and creates) the packs in `folder`; a pack takes no more chunks past `packLimit` bytes.
    init(folder: URL, packLimit: Int64) throws {
        self.folder = folder
        self.packLimit = packLimit
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var configuration = Configuration()
        // Two services on one data folder (tests) wait for each other's writes rather than fail.
        configuration.busyMode = .timeout(10)
        index = try DatabasePool(path: folder.appendingPathComponent("index.sqlite").path, configuration: configuration)
        // An acknowledged chunk is indexed durably: each commit flushes the write-ahead log, a power loss included.
        // Set on the writer once the pool is open: in WAL mode the pool sets NORMAL there.
        try index.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE chunk (
                        account TEXT NOT NULL, hash TEXT NOT NULL, pack INTEGER NOT NULL, offset INTEGER NOT NULL,
                        length INTEGER NOT NULL, PRIMARY KEY (account, hash)) WITHOUT ROWID
                    """)
        }
        try migrator.migrate(index)
    }

    /// The pack file with this number.
    func url(ofPack number: Int64) -> URL {
        folder.appendingPathComponent("\(number).pack", isDirectory: false)
    }

    /// Where the account's chunk with this hash lies, if packed.
    func location(of hash: ChunkHash, of account: AccountID) throws -> Location? {
        let key = ChunkKey(account: account, hash: hash)
        if let known = recent.withLock({ $0[key] }) { return known }
        let found = try index.read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: "SELECT pack, offset, length FROM chunk WHERE account = ? AND hash = ?"),
                arguments: [account.string, hash.string]
            ).map { Location(pack: $0[0], offset: $0[1], length: $0[2]) }
        }
        if let found { remember([(key, found)]) }
        return found
    }

    private func remember(_ locations: [(ChunkKey, Location)]) {
        recent.withLock { recent in
            if recent.count + locations.count > Self.recentLimit { recent.removeAll(keepingCapacity: true) }
            for (key, location) in locations.suffix(Self.recentLimit) { recent[key] = location }
        }
    }

    /// Appends checked chunks to the pack being filled, flushes it, then indexes them, in one transaction. Blocks:
    /// run it off the threads requests share. A chunk already indexed stays where it was.
    func append(_ chunks: [(account: AccountID, hash: ChunkHash, bytes: [UInt8])]) throws {
        guard !chunks.isEmpty else { return }
        let total = chunks.reduce(Int64(0)) { $0 + Int64($1.bytes.count) }
        let (pack, start) = try reserve(total)
        var offset = start
        var locations: [Location] = []
        do {
            for chunk in chunks {
                try pack.write(chunk.bytes, at: offset)
                locations.append(Location(pack: pack.number, offset: offset, length: Int64(chunk.bytes.count)))
                offset += Int64(chunk.bytes.count)
            }
            try pack.flush(through: pack.finishedWriting())
        } catch {
            pack.fail()
            throw error
        }
        let indexed = try index.write { db in
            let insert = try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO chunk (account, hash, pack, offset, length) VALUES (?, ?, ?, ?, ?)")
            var indexed: [(ChunkKey, Location)] = []
            for (chunk, location) in zip(chunks, locations) {
                try insert.execute(arguments: [
                    chunk.account.string, chunk.hash.string, location.pack, location.offset, location.length,
                ])
                // A chunk indexed before stays where it was: only a new entry is this location.
                if db.changesCount > 0 {
                    indexed.append((ChunkKey(account: chunk.account, hash: chunk.hash), location))
                }
            }
            return indexed
        }
        remember(indexed)
    }

    /// `count` bytes of the pack being filled, at its end: a new pack when there is none or it is full.
    private func reserve(_ count: Int64) throws -> (PackFile, Int64) {
        try writer.withLock { current in
            if let (pack, size) = current, !pack.hasFailed, size == 0 || size + count <= packLimit {
                current = (pack, size + count)
                return (pack, size)
            }
            let pack = try PackFile.create(in: folder, after: current?.pack.number)
            current = (pack, count)
            return (pack, 0)
        }
    }

    /// The bytes at `location`, read in pieces of at most `pieceSize`.
    func reader(_ location: Location, pieceSize: Int) throws -> ChunkReader {
        let pack = try readable(location.pack)
        let position = Mutex(location.offset)
        let end = location.offset + location.length
        return ChunkReader(size: location.length) {
            try position.withLock { offset -> [UInt8]? in
                guard offset < end else { return nil }
                let piece = try pack.read(Int(min(Int64(pieceSize), end - offset)), at: offset)
                offset += Int64(piece.count)
                return piece
            }
        }
    }

    /// Pack `number`, opened for reading (kept open for the next reads, a bounded number of packs at a time).
    private func readable(_ number: Int64) throws -> PackFile {
        if let open = readers.withLock({ $0[number] }) { return open }
        let pack = try PackFile.open(url(ofPack: number), number: number)
        readers.withLock { open in
            if open.count >= Self.openForReading, let some = open.keys.first { open[some] = nil }
            open[number] = pack
        }
        return pack
    }
}

/// An open pack file, closed when the last of its users lets go of it.
final class PackFile: Sendable {
    let number: Int64
    private let descriptor: Int32
    /// The writes finished, those a flush covered, and whether a write or flush failed. Flushes take this lock in
    /// turn, so one that follows a failed one knows, and one whose writes a flush begun after them covered is done.
    private let flushing = Mutex(Flushing())

    private struct Flushing {
        var written: UInt64 = 0
        var flushed: UInt64 = 0
        var failed = false
    }

    private init(number: Int64, descriptor: Int32) {
        self.number = number
        self.descriptor = descriptor
    }

    /// A new, empty pack numbered after `previous` (the process's pack before; the first after any pack in
    /// `folder`), its entry in the folder flushed.
    static func create(in folder: URL, after previous: Int64?) throws -> PackFile {
        var number = try previous.map { $0 + 1 } ?? highestNumber(in: folder) + 1
        while true {
            let path = folder.appendingPathComponent("\(number).pack").path
            let descriptor = openFile(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if descriptor >= 0 {
                FileChunkUpload.flushFolder(folder)
                return PackFile(number: number, descriptor: descriptor)
            }
            // Another process on the same folder took the number (two services on one data folder in tests).
            guard errno == EEXIST else { throw POSIXError.current("create \(path)") }
            number += 1
        }
    }

    /// An existing pack, for reading.
    static func open(_ url: URL, number: Int64) throws -> PackFile {
        let descriptor = openFile(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError.current("open \(url.path)") }
        return PackFile(number: number, descriptor: descriptor)
    }

    private static func highestNumber(in folder: URL) throws -> Int64 {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).compactMap { name in
            name.hasSuffix(".pack") ? Int64(name.dropLast(5)) : nil
        }.max() ?? 0
    }

    /// Counts a writer's writes finished: a flush begun after covers them.
    /// - Returns: What to hand ``flush(through:)``.
    func finishedWriting() -> UInt64 {
        flushing.withLock {
            $0.written += 1
            return $0.written
        }
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: [UInt8], at offset: Int64) throws {
        try bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let written = pwrite(
                    descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
                if written < 0 {
                    if errno == EINTR { continue }
                    throw POSIXError.current("write pack \(number)")
                }
                done += written
            }
        }
    }

    /// Flushes what was written to the disk, up to the writes `ticket` (from ``finishedWriting()``) counts: nothing
    /// when a flush begun after them did it already. Fails, as every flush after, once one failed.
    func flush(through ticket: UInt64) throws {
        try flushing.withLock { state in
            guard !state.failed else {
                throw POSIXError(.EIO, userInfo: [NSLocalizedDescriptionKey: "pack \(number) failed before"])
            }
            guard state.flushed < ticket else { return }
            let covering = state.written
            guard fdatasync(descriptor) == 0 else {
                state.failed = true
                throw POSIXError.current("flush pack \(number)")
            }
            state.flushed = covering
        }
    }

    /// Marks the pack failed: it takes no more chunks, and its flushes fail.
    func fail() { flushing.withLock { $0.failed = true } }

    /// Whether a write or flush failed.
    var hasFailed: Bool { flushing.withLock { $0.failed } }

    /// `count` bytes at `offset`; fewer only where the pack ends.
    func read(_ count: Int, at offset: Int64) throws -> [UInt8] {
        var piece = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read = piece.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            }
            if read < 0 {
                if errno == EINTR { continue }
                throw POSIXError.current("read pack \(number)")
            }
            if read == 0 { break }
            done += read
        }
        guard done == count else {
            throw POSIXError(.EIO, userInfo: [NSLocalizedDescriptionKey: "pack \(number) ends inside a chunk"])
        }
        return piece
    }

    deinit { close(descriptor) }
}

/// `open(2)`, under a name the types above do not hide.
private func openFile(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    open(path, flags, mode)
}
