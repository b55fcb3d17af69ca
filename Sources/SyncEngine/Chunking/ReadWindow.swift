#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The bytes a ``FileChunker`` has read but not yet chunked: one buffer, refilled from a file descriptor in reads of
/// at most a fixed size and compacted (the unconsumed bytes moved to the front) when it is full. It starts at the
/// size the file is expected to have and grows, up to its limit, only as far as the file turns out longer: a small
/// file is read into a buffer of its own size, not into one that could hold a maximum-size chunk and a whole read.
struct ReadWindow: ~Copyable {
    private var storage: UnsafeMutableRawBufferPointer
    private let readSize: Int
    private let limit: Int
    private var start = 0
    private var end = 0
    /// Whether a read has returned end of file.
    private(set) var isAtEnd = false

    /// A window that can grow to hold `retained` unconsumed bytes plus one read of `readSize` bytes, first sized for
    /// `expected` bytes (the file's length when the read starts) and one more (a read that returns end of file).
    init(retaining retained: Int, readSize: Int, expecting expected: Int64) {
        self.limit = retained + readSize
        self.readSize = readSize
        let first = Int(clamping: min(Int64(limit), max(expected + 1, Self.smallest)))
        self.storage = .allocate(byteCount: first, alignment: 16)
    }

    /// The smallest buffer a window starts with.
    static let smallest: Int64 = 4096

    deinit { storage.deallocate() }

    /// The bytes read and not yet consumed; valid until the next mutating call.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[start..<end]) }

    /// Reads from `descriptor` until at least `count` bytes are available or the file ends.
    ///
    /// `count` must be at most the `retained` the window was made with.
    /// - Throws: ``ChunkingError/Code/readFailed`` if `read` fails; the message names `source`.
    mutating func fill(toAtLeast count: Int, from descriptor: Int32, source: String) throws(ChunkingError) {
        while end - start < count, !isAtEnd {
            if end + readSize > storage.count {
                makeRoom()
            }
            let got = read(descriptor, storage.baseAddress! + end, min(readSize, storage.count - end))
            if got > 0 {
                end += got
            } else if got == 0 {
                isAtEnd = true
            } else if errno != EINTR {
                let reason = String(cString: strerror(errno))
                throw ChunkingError(.readFailed, "reading \(source) failed: \(reason)")
            }
        }
    }

    /// Moves the unconsumed bytes to the front; when that leaves no room for another byte, grows the buffer (twice
    /// as large, up to its limit). Called only when fewer than `count` bytes are held, so at the limit a whole read
    /// always fits.
    private mutating func makeRoom() {
        let kept = end - start
        if kept > 0, start > 0 {
            storage.baseAddress!.copyMemory(from: storage.baseAddress! + start, byteCount: kept)
        }
        start = 0
        end = kept
        guard end == storage.count, storage.count < limit else { return }
        let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: min(limit, storage.count * 2), alignment: 16)
        grown.baseAddress!.copyMemory(from: storage.baseAddress!, byteCount: kept)
        storage.deallocate()
        storage = grown
    }

    /// Drops the first `count` available bytes.
    mutating func consume(_ count: Int) {
        precondition(count <= end - start, "consuming more than was read")
        start += count
    }
}
