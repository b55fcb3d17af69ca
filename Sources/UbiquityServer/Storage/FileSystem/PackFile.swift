import Crypto
import Foundation
import Synchronization
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An open pack file, closed when the last of its users lets go of it.
final class PackFile: Sendable {
    let number: Int64
    private let descriptor: Int32
    /// The writes finished, those a flush covered, and whether a write or flush failed. Flushes take this lock in
    /// turn, so one that follows a failed one knows, and one whose writes a flush begun after them covered is done.
    private let flushing = Mutex(Flushing())
    /// The appends under way, whether the writer moved on to another pack, and whether the pack was handed to be
    /// sealed (once both: no append is under way and none will begin).
    private let use = Mutex((appends: 0, retired: false, sealing: false))

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
    /// `folder`), its entry in the folder flushed, locked as being filled for as long as it is open.
    static func create(in folder: URL, after previous: Int64?) throws -> PackFile {
        let lock = try lockCreation(in: folder)
        defer { close(lock) }
        var number = try previous.map { $0 + 1 } ?? highestNumber(in: folder) + 1
        while true {
            let path = folder.appendingPathComponent("\(number).pack", isDirectory: false).path
            let descriptor = openFile(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if descriptor >= 0 {
                guard flock(descriptor, LOCK_EX) == 0 else {
                    let error = POSIXError.current("lock \(path)")
                    close(descriptor)
                    throw error
                }
                FileChunkUpload.flushFolder(folder)
                return PackFile(number: number, descriptor: descriptor)
            }
            // Another process on the same folder took the number (two services on one data folder in tests).
            guard errno == EEXIST else { throw POSIXError.current("create \(path)") }
            number += 1
        }
    }

    /// Takes the folder's lock on beginning packs (`create.lock`), waiting for it.
    /// - Returns: The descriptor holding it; closing it lets go.
    static func lockCreation(in folder: URL) throws -> Int32 {
        let path = folder.appendingPathComponent("create.lock", isDirectory: false).path
        let descriptor = openFile(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError.current("open \(path)") }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else {
                let error = POSIXError.current("lock \(path)")
                close(descriptor)
                throw error
            }
        }
        return descriptor
    }

    /// An existing pack, for reading.
    static func open(_ url: URL, number: Int64) throws -> PackFile {
        let descriptor = openFile(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError.current("open \(url.path)") }
        return PackFile(number: number, descriptor: descriptor)
    }

    /// An existing pack no live process is filling, for reading its records; `nil` while one is.
    static func openAbandoned(_ url: URL, number: Int64) throws -> PackFile? {
        let pack = try open(url, number: number)
        guard flock(pack.descriptor, LOCK_SH | LOCK_NB) == 0 else {
            if errno == EWOULDBLOCK { return nil }
            throw POSIXError.current("lock \(url.path)")
        }
        return pack
    }

    /// The numbers of the packs in `folder`.
    static func numbers(in folder: URL) throws -> [Int64] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).compactMap { name in
            name.hasSuffix(".pack") ? Int64(name.dropLast(5)) : nil
        }.sorted()
    }

    private static func highestNumber(in folder: URL) throws -> Int64 {
        try numbers(in: folder).last ?? 0
    }

    /// Counts an append begun (made while the pack is the writer's).
    func enter() { use.withLock { $0.appends += 1 } }

    /// Counts an append ended.
    /// - Returns: Whether the pack is to be sealed now: the writer moved on and this was the last append.
    func leave() -> Bool {
        use.withLock { use in
            use.appends -= 1
            return Self.sealable(&use)
        }
    }

    /// Marks the pack as one the writer moved on from.
    /// - Returns: Whether the pack is to be sealed now: no append is under way.
    func retire() -> Bool {
        use.withLock { use in
            use.retired = true
            return Self.sealable(&use)
        }
    }

    private static func sealable(_ use: inout (appends: Int, retired: Bool, sealing: Bool)) -> Bool {
        guard use.retired, use.appends == 0, !use.sealing else { return false }
        use.sealing = true
        return true
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

    /// Flushes everything written to the pack, whoever wrote it.
    func flushAll() throws {
        guard fdatasync(descriptor) == 0 else { throw POSIXError.current("flush pack \(number)") }
    }

    /// The pack's whole records, in order, leaving out those `isIndexed` says the index has: a record is whole when its
    /// header reads (``PackRecord``), its bytes are all there, and they hash to its hash. Past anything else (what a
    /// crash left half written, a pack from before records had headers) the next header's marker is looked for.
    func records(skippingIndexed isIndexed: (AccountID, ChunkHash) throws -> Bool) throws -> [(
        account: AccountID, hash: ChunkHash, offset: Int64, length: Int64
    )] {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw POSIXError.current("stat pack \(number)") }
        let size = Int64(info.st_size)
        var found: [(account: AccountID, hash: ChunkHash, offset: Int64, length: Int64)] = []
        var offset: Int64 = 0
        while offset + Int64(PackRecord.headerSize) <= size {
            let start = offset + Int64(PackRecord.headerSize)
            if let record = PackRecord(decoding: try read(PackRecord.headerSize, at: offset)),
                record.length <= size - start
            {
                if try isIndexed(record.account, record.hash) {
                    offset = start + record.length
                    continue
                }
                let bytes = try read(Int(record.length), at: start)
                if (try? ChunkHash(digest: SHA256.hash(data: bytes))) == record.hash {
                    found.append((record.account, record.hash, start, record.length))
                    offset = start + record.length
                    continue
                }
            }
            guard let next = try nextMarker(after: offset, before: size) else { break }
            offset = next
        }
        return found
    }

    /// Where the next record header's marker begins after `offset`, if anywhere before `end`.
    private func nextMarker(after offset: Int64, before end: Int64) throws -> Int64? {
        let marker = PackRecord.marker
        let block = 1 << 20
        var position = offset + 1
        while position + Int64(marker.count) <= end {
            let piece = try read(Int(min(Int64(block + marker.count - 1), end - position)), at: position)
            if let found = piece.firstRange(of: marker) { return position + Int64(found.lowerBound) }
            position += Int64(block)
        }
        return nil
    }

    deinit { close(descriptor) }
}

/// `open(2)`, under a name the types above do not hide.
private func openFile(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    open(path, flags, mode)
}

/// The header before each chunk's bytes in a pack: a marker, the account, the hash's 32 bytes and the length.
struct PackRecord: Equatable {
    static let marker: [UInt8] = Array("ubqchnk1".utf8)
    static let headerSize = 64

    let account: AccountID
    let hash: ChunkHash
    let length: Int64

    init(account: AccountID, hash: ChunkHash, length: Int64) {
        self.account = account
        self.hash = hash
        self.length = length
    }

    /// Reads a header; `nil` when `bytes` are not one.
    init?(decoding bytes: [UInt8]) {
        guard bytes.count == Self.headerSize, bytes.starts(with: Self.marker),
            let hash = try? ChunkHash(digest: bytes[24..<56])
        else { return nil }
        let uuid = bytes[8..<24].withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }
        let length = bytes[56..<64].withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(as: Int64.self)) }
        guard length >= 0 else { return nil }
        self.init(account: AccountID(uuid: UUID(uuid: uuid)), hash: hash, length: length)
    }

    /// The header's bytes.
    func encoded() -> [UInt8] {
        var bytes = Self.marker
        bytes.reserveCapacity(Self.headerSize)
        withUnsafeBytes(of: account.uuid.uuid) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: hash.digest)
        withUnsafeBytes(of: length.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }
}
