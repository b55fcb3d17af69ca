#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The bytes a ``FileChunker`` has read but not yet chunked: one buffer of a fixed capacity, refilled from a file
/// descriptor in fixed-size reads and compacted (the unconsumed bytes moved to the front) when a read would not fit.
struct ReadWindow: ~Copyable {
    private let storage: UnsafeMutableRawBufferPointer
    private let readSize: Int
    private var start = 0
    private var end = 0
    /// Whether a read has returned end of file.
    private(set) var isAtEnd = false

    /// A window that can hold `retained` unconsumed bytes plus one read of `readSize` bytes.
    init(retaining retained: Int, readSize: Int) {
        self.storage = .allocate(byteCount: retained + readSize, alignment: 16)
        self.readSize = readSize
    }

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
                let kept = end - start
                if kept > 0, start > 0 {
                    storage.baseAddress!.copyMemory(from: storage.baseAddress! + start, byteCount: kept)
                }
                start = 0
                end = kept
            }
            let got = read(descriptor, storage.baseAddress! + end, readSize)
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

    /// Drops the first `count` available bytes.
    mutating func consume(_ count: Int) {
        precondition(count <= end - start, "consuming more than was read")
        start += count
    }
}
