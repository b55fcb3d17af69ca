import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension UUID {
    /// A random (version 4) UUID from the system's generator: on Linux `UUID()` opens, reads and closes
    /// `/dev/urandom` for each, which cost more than the rest of inserting an object or placing a small download. The generator's bytes are
    /// drawn a page at a time (``RandomPool``): one system call for 256 ids rather than two for each.
    public static func random() -> UUID {
        var bytes = RandomPool.shared.next()
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  // the RFC 4122 variant
            return UUID(uuid: raw.load(as: uuid_t.self))
        }
    }
}

/// Random 16-byte values from the system's generator, read 4 KiB at a time; each value is handed out once.
final class RandomPool: Sendable {
    static let shared = RandomPool()

    private struct Buffer {
        var words: [UInt64] = []
        var next = 0
    }

    private let buffer = Mutex(Buffer())

    func next() -> (UInt64, UInt64) {
        buffer.withLock { buffer in
            if buffer.next + 2 > buffer.words.count {
                buffer.words = Self.draw(512)
                buffer.next = 0
            }
            defer { buffer.next += 2 }
            return (buffer.words[buffer.next], buffer.words[buffer.next + 1])
        }
    }

    /// The system's random device, opened once for the life of the process; -1 if it cannot be.
    private static let device = open("/dev/urandom", O_RDONLY | O_CLOEXEC)

    /// `count` words from the system's random device in as few reads as it allows; from the standard library's
    /// generator (a system call a word) for any it would not give.
    private static func draw(_ count: Int) -> [UInt64] {
        [UInt64](unsafeUninitializedCapacity: count) { words, initialized in
            let raw = UnsafeMutableRawBufferPointer(words)
            var filled = 0
            while device >= 0, filled < raw.count {
                let read = Foundation.read(device, raw.baseAddress! + filled, raw.count - filled)
                if read > 0 {
                    filled += read
                } else if read < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            var generator = SystemRandomNumberGenerator()
            for index in (filled / 8)..<count { words[index] = generator.next() }
            initialized = count
        }
    }
}
