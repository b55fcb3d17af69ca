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
/// transaction. Each chunk's bytes follow a header naming its account, hash and length (``PackRecord``), so a pack
/// describes itself: the index is not flushed at each commit (a commit survives a killed process; a power loss may
/// take the latest), and the packs it may have lost entries of are read again when the store opens. A pack is
/// sealed — its entries flushed with one flushed commit, and recorded as needing no such reading — once the process
/// filling it moved on to the next and every append into it ended. Opening reads every pack not sealed whose
/// writer is gone (a live writer holds a lock on its pack), indexes each whole record whose bytes match its hash
/// and that the index lacks, flushes the pack, then seals it.
///
/// A pack a write or flush failed on takes no more chunks, and nothing written to it before a failed flush is
/// indexed after (the kernel reports a failed writeback to one flush only). A chunk is indexed only after its bytes
/// were flushed, so after any crash every indexed chunk is whole; what a crash leaves half written is skipped when
/// a pack is read again (the next record is found by its header's marker). A pack is appended to only by the
/// process that created it, and a new one is begun at each start and whenever the current one is full.
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

    /// Opens (and creates) the packs in `folder`; a pack takes no more chunks past `packLimit` bytes. Packs not
    /// sealed whose writer is gone are read for the entries the index lacks (see above).
    init(folder: URL, packLimit: Int64) throws {
        self.folder = folder
        self.packLimit = packLimit
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var configuration = Configuration()
        // Two services on one data folder (tests) wait for each other's writes rather than fail.
        configuration.busyMode = .timeout(10)
        index = try DatabasePool(
            path: folder.appendingPathComponent("index.sqlite", isDirectory: false).path, configuration: configuration)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE chunk (
                        account TEXT NOT NULL, hash TEXT NOT NULL, pack INTEGER NOT NULL, offset INTEGER NOT NULL,
                        length INTEGER NOT NULL, PRIMARY KEY (account, hash)) WITHOUT ROWID
                    """)
        }
        migrator.registerMigration("v2-sealed-packs") { db in
            try db.execute(
                sql: """
                    CREATE TABLE sealed_pack (number INTEGER PRIMARY KEY);
                    CREATE TABLE failed_pack (number INTEGER PRIMARY KEY)
                    """)
            // Packs from before records had headers were indexed with every commit flushed: sealed already.
            for number in try PackFile.numbers(in: folder) {
                try db.execute(sql: "INSERT INTO sealed_pack (number) VALUES (?)", arguments: [number])
            }
        }
        try migrator.migrate(index)
        try recoverUnsealedPacks()
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

    /// Appends checked chunks to the pack being filled, each after its record's header, flushes it, then indexes
    /// them, in one transaction. Blocks: run it off the threads requests share. A chunk already indexed stays where
    /// it was.
    func append(_ chunks: [(account: AccountID, hash: ChunkHash, bytes: [UInt8])]) throws {
        guard !chunks.isEmpty else { return }
        let total = chunks.reduce(Int64(0)) { $0 + Int64(PackRecord.headerSize + $1.bytes.count) }
        let (pack, start) = try reserve(total)
        defer { if pack.leave() { seal(pack) } }
        var offset = start
        var locations: [Location] = []
        do {
            for chunk in chunks {
                let header = PackRecord(account: chunk.account, hash: chunk.hash, length: Int64(chunk.bytes.count))
                try pack.write(header.encoded(), at: offset)
                offset += Int64(PackRecord.headerSize)
                try pack.write(chunk.bytes, at: offset)
                locations.append(Location(pack: pack.number, offset: offset, length: Int64(chunk.bytes.count)))
                offset += Int64(chunk.bytes.count)
            }
            try pack.flush(through: pack.finishedWriting())
        } catch {
            pack.fail()
            // Recorded before the refusal is answered: what the failed flush left in the page cache is never read as
            // records at a later opening (the kernel reports a failed writeback once, so a flush then would pass).
            try? markFailed(pack.number)
            throw error
        }
        let indexed = try index.write { db in
            try Self.insert(zip(chunks.map { ($0.account, $0.hash) }, locations), into: db)
        }
        remember(indexed)
    }

    /// Indexes chunks at their locations; one indexed before stays where it was.
    /// - Returns: The entries that are new.
    private static func insert(
        _ entries: some Sequence<((AccountID, ChunkHash), Location)>, into db: Database
    ) throws -> [(ChunkKey, Location)] {
        let insert = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO chunk (account, hash, pack, offset, length) VALUES (?, ?, ?, ?, ?)")
        var indexed: [(ChunkKey, Location)] = []
        for ((account, hash), location) in entries {
            try insert.execute(arguments: [
                account.string, hash.string, location.pack, location.offset, location.length,
            ])
            if db.changesCount > 0 { indexed.append((ChunkKey(account: account, hash: hash), location)) }
        }
        return indexed
    }

    /// `count` bytes of the pack being filled, at its end, counted as one of its appends under way: a new pack
    /// when there is none, or it failed, or it is full (the one left behind is sealed when its last append ends).
    private func reserve(_ count: Int64) throws -> (PackFile, Int64) {
        let (reserved, left) = try writer.withLock { current -> ((PackFile, Int64), PackFile?) in
            if let (pack, size) = current, !pack.hasFailed, size == 0 || size + count <= packLimit {
                current = (pack, size + count)
                pack.enter()
                return ((pack, size), nil)
            }
            let pack = try PackFile.create(in: folder, after: current?.pack.number)
            pack.enter()
            let left = current?.pack
            current = (pack, count)
            return ((pack, 0), left)
        }
        if let left, left.retire() { seal(left) }
        return reserved
    }

    /// Makes the index's entries of `pack` durable with one flushed commit, which records the pack as sealed: it is
    /// not read again at the next opening. Called once no append into it is under way and none will begin. A
    /// failure leaves it to be read again, which loses nothing.
    private func seal(_ pack: PackFile) {
        try? seal(number: pack.number)
    }

    private func seal(number: Int64) throws {
        try index.writeWithoutTransaction { db in
            // The flushed commit also flushes every commit before it in the write-ahead log.
            try db.execute(sql: "PRAGMA synchronous = FULL")
            defer { try? db.execute(sql: "PRAGMA synchronous = NORMAL") }
            try db.inTransaction {
                try db.execute(sql: "INSERT OR IGNORE INTO sealed_pack (number) VALUES (?)", arguments: [number])
                return .commit
            }
        }
    }

    private func markFailed(_ number: Int64) throws {
        try index.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            defer { try? db.execute(sql: "PRAGMA synchronous = NORMAL") }
            try db.inTransaction {
                try db.execute(sql: "INSERT OR IGNORE INTO failed_pack (number) VALUES (?)", arguments: [number])
                return .commit
            }
        }
    }

    // MARK: - Opening after a crash

    /// Reads each pack neither sealed nor being filled by a live process, indexes the whole records the index
    /// lacks (after flushing the pack, so that what is indexed is durable), and seals it. Holds the folder's lock
    /// on creating packs meanwhile, so that no process begins a pack that is read as abandoned.
    private func recoverUnsealedPacks() throws {
        let lock = try PackFile.lockCreation(in: folder)
        defer { close(lock) }
        let (sealed, failed) = try index.read { db in
            (
                Set(try Int64.fetchAll(db, sql: "SELECT number FROM sealed_pack")),
                Set(try Int64.fetchAll(db, sql: "SELECT number FROM failed_pack"))
            )
        }
        for number in try PackFile.numbers(in: folder) where !sealed.contains(number) {
            guard let pack = try PackFile.openAbandoned(url(ofPack: number), number: number) else { continue }
            // A pack a write or flush failed on keeps only what was indexed before.
            if failed.contains(number) {
                try seal(number: number)
                continue
            }
            let found = try pack.records(skippingIndexed: { account, hash in
                try index.read { db in
                    try Bool.fetchOne(
                        db.cachedStatement(sql: "SELECT 1 FROM chunk WHERE account = ? AND hash = ?"),
                        arguments: [account.string, hash.string]) ?? false
                }
            })
            if !found.isEmpty {
                try pack.flushAll()
                let entries = found.map {
                    (($0.account, $0.hash), Location(pack: number, offset: $0.offset, length: $0.length))
                }
                _ = try index.write { db in try Self.insert(entries, into: db) }
            }
            try seal(number: number)
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
