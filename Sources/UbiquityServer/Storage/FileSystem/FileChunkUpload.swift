import Crypto
import Foundation
import NIOPosix
import Synchronization
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An upload into ``FileChunkStore``: held in memory while it is small and the store's memory budget allows (it is
/// then packed, ``ChunkPacks``), else written to a file of its own in `incoming/` (then renamed into place).
///
/// `@unchecked Sendable`: an upload belongs to the one request that began it, which calls it from one task, one
/// call at a time (the protocol's contract); it is never shared.
final class FileChunkUpload: ChunkUpload, @unchecked Sendable {
    /// The largest chunk kept in memory; a larger one is written to a file of its own as it arrives.
    static let memoryLimit = 1 << 20

    /// What a checked upload hands over to be stored.
    enum Sealed {
        /// Its bytes, to be packed.
        case bytes([UInt8])
        /// Its open file in `incoming/` (the caller closes it), to be flushed and renamed into place.
        case file(Int32)
    }

    private let store: FileChunkStore
    let account: AccountID
    /// The bytes while in memory; `nil` once written to a file, sealed or dropped.
    private var buffer: [UInt8]? = []
    /// The bytes of the store's budget the buffer holds: its capacity, which grows ahead of its bytes.
    private var reserved = 0
    /// The file in `incoming/` once the bytes went to one.
    private var file: (temporary: URL, descriptor: Int32)?
    private var ended = false
    /// Whether the store counts the upload among those unfinished in memory.
    private var counted = true
    private var hasher = SHA256()
    private(set) var byteCount: Int64 = 0

    init(store: FileChunkStore, account: AccountID) {
        self.store = store
        self.account = account
        store.memory.begin()
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard !ended else { throw POSIXError(.EBADF) }
        hasher.update(bufferPointer: bytes)
        if let held = buffer?.count {
            if held + bytes.count <= Self.memoryLimit, grow(toHold: held + bytes.count) {
                buffer!.append(contentsOf: bytes)
            } else {
                try spill()
            }
        }
        if let file { try Self.writeAll(bytes, to: file.descriptor) }
        byteCount += Int64(bytes.count)
    }

    /// Makes room in the buffer for `count` bytes, taking what its capacity grows by (doubling, up to
    /// ``memoryLimit``) from the store's budget; `false` when the budget has not that much left.
    private func grow(toHold count: Int) -> Bool {
        guard count > reserved else { return true }
        let capacity = min(Self.memoryLimit, max(count, reserved * 2))
        guard store.memory.reserve(capacity - reserved) else { return false }
        buffer!.reserveCapacity(capacity)
        reserved = capacity
        return true
    }

    /// Moves the bytes held in memory to a file in `incoming/`, where the rest will go too.
    private func spill() throws {
        let temporary = store.incoming.appendingPathComponent(UUID.random().uuidString.lowercased(), isDirectory: false)
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError.current("create \(temporary.path)") }
        file = (temporary, descriptor)
        let held = buffer ?? []
        releaseMemory()
        uncount()
        try held.withUnsafeBytes { try Self.writeAll($0, to: descriptor) }
    }

    private static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) throws {
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw POSIXError.current("write chunk")
            }
            offset += written
        }
    }

    func finish(expecting hash: ChunkHash) async throws {
        try await store.finish([(self, hash)])
    }

    /// Checks the bytes against `hash` and hands them over; a wrong hash drops them. Either way the upload has
    /// ended.
    func seal(expecting hash: ChunkHash) throws -> Sealed {
        guard !ended else { throw POSIXError(.EBADF) }
        end()
        let actual = try ChunkHash(digest: hasher.finalize())
        guard actual == hash else {
            drop()
            throw ProtocolError(.chunkHashMismatch, "the bytes sent hash to \(actual), not \(hash); nothing was stored")
        }
        if let file {
            // Starts writing the bytes to disk without waiting, so that a batch's flushes that follow find their
            // files' writes under way together.
            FileWriteback.start(file.descriptor)
            return .file(file.descriptor)
        }
        return .bytes(buffer ?? [])
    }

    /// Flushes a sealed file to disk; a failure drops it.
    func flush(_ descriptor: Int32) throws {
        guard fsync(descriptor) == 0 else {
            discard()
            throw POSIXError.current("fsync chunk")
        }
    }

    /// Renames a sealed, flushed file into place as the chunk `hash`.
    /// - Returns: The folder it is now in (to be flushed).
    func place(_ hash: ChunkHash) throws -> URL {
        guard let temporary = file?.temporary else { throw POSIXError(.EBADF) }
        let destination = store.location(of: hash, of: account)
        let folder = destination.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        guard rename(temporary.path, destination.path) == 0 else {
            discard()
            throw POSIXError.current("rename chunk into \(folder.path)")
        }
        file = nil
        return folder
    }

    /// Lets go of a sealed upload's bytes, stored elsewhere now or not to be stored (the caller closes a sealed
    /// file).
    func discard() {
        if let file { unlink(file.temporary.path) }
        file = nil
        releaseMemory()
    }

    /// Lets go of the bytes held in memory and their share of the store's budget.
    private func releaseMemory() {
        guard buffer != nil else { return }
        store.memory.release(reserved)
        reserved = 0
        buffer = nil
    }

    /// Drops the bytes of an upload not sealed, or of one refused.
    private func drop() {
        if let file {
            close(file.descriptor)
            unlink(file.temporary.path)
        }
        file = nil
        releaseMemory()
    }

    /// Flushes a folder's entries to disk.
    static func flushFolder(_ folder: URL) {
        let directory = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    func cancel() {
        guard !ended else { return }
        end()
        drop()
    }

    /// Marks the upload ended: sealed or dropped.
    private func end() {
        ended = true
        uncount()
    }

    /// Takes the upload out of the store's count of those unfinished in memory.
    private func uncount() {
        guard counted else { return }
        counted = false
        store.memory.end()
    }

    deinit {
        cancel()
        releaseMemory()
        uncount()
    }
}

/// What the uploads of one ``FileChunkStore`` hold in memory: bounded, so many concurrent requests do not grow it
/// without limit (past the budget, an upload goes to a file).
final class UploadMemory: Sendable {
    /// The most bytes held at once.
    let budget: Int
    private let held = Atomic<Int>(0)
    private let live = Atomic<Int>(0)

    init(budget: Int) { self.budget = budget }

    /// Takes `count` more bytes of the budget, if it has them.
    func reserve(_ count: Int) -> Bool {
        var current = held.load(ordering: .relaxed)
        while current + count <= budget {
            let (exchanged, original) = held.compareExchange(
                expected: current, desired: current + count, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives `count` bytes back.
    func release(_ count: Int) { held.subtract(count, ordering: .relaxed) }

    /// The bytes held now.
    var heldBytes: Int { held.load(ordering: .relaxed) }

    /// Counts an upload begun (in memory).
    func begin() { live.add(1, ordering: .relaxed) }
    /// Counts an upload sealed, dropped, or moved to a file.
    func end() { live.subtract(1, ordering: .relaxed) }
    /// The uploads begun and neither sealed nor dropped whose bytes are in memory.
    var unfinishedInMemory: Int { live.load(ordering: .relaxed) }
}

private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
