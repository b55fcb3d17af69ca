import Crypto
import Foundation
import Synchronization

/// The identity of one object, the same on every device: its entity and a UUID.
///
/// Objects of an entity with a uniqueness key take their UUID from the key's values when first saved, so two
/// devices that each create "Family" create the same object. Until then such an object's id is temporary.
///
/// ```swift
/// let uri = item.objectID.uriRepresentation()   // x-ubiquity-record://Item/6F1C…
/// let same = ManagedObjectID(uriRepresentation: uri)
/// ```
public struct ManagedObjectID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The entity's name.
    public let entityName: String
    /// The object's global identifier.
    public let uuid: UUID
    /// Whether the id lasts only until the object is saved (an inserted object of an entity with a uniqueness key).
    public let isTemporaryID: Bool

    /// Creates an id.
    public init(entityName: String, uuid: UUID, isTemporaryID: Bool = false) {
        self.entityName = entityName
        self.uuid = uuid
        self.isTemporaryID = isTemporaryID
    }

    /// Hashes the UUID alone: it names one object (ids equal in everything else hash alike), and hashing the entity's
    /// name too was a fifth of a large fetch, which registers every object it reads by id.
    public func hash(into hasher: inout Hasher) {
        // As two words: Foundation hashes a UUID as a buffer of bytes, which took longer.
        let words = withUnsafeBytes(of: uuid.uuid) {
            ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
        hasher.combine(words.0)
        hasher.combine(words.1)
    }

    /// The scheme of ``uriRepresentation()``.
    public static let uriScheme = "x-ubiquity-record"

    /// The id as a URL, `x-ubiquity-record://Entity/UUID`, to keep outside the store.
    public func uriRepresentation() -> URL {
        var components = URLComponents()
        components.scheme = Self.uriScheme
        components.host = entityName
        components.path = "/" + uuid.uuidString + (isTemporaryID ? "/t" : "")
        return components.url!
    }

    /// Reads an id from ``uriRepresentation()``.
    /// - Returns: `nil` when the URL is not such an id.
    public init?(uriRepresentation url: URL) {
        guard url.scheme == Self.uriScheme, let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let host = components.host, !host.isEmpty
        else { return nil }
        let parts = components.path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count == 1 || (parts.count == 2 && parts[1] == "t"), let uuid = UUID(uuidString: String(parts[0]))
        else { return nil }
        self.init(entityName: host, uuid: uuid, isTemporaryID: parts.count == 2)
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        if lhs.entityName != rhs.entityName { return lhs.entityName < rhs.entityName }
        // Byte order, the order of the uppercase text too, without formatting either.
        return lhs.uuid.isOrdered(before: rhs.uuid)
    }

    public var description: String { "\(entityName)/\(uuid.uuidString)\(isTemporaryID ? " (temporary)" : "")" }
}

extension ManagedObjectID {
    /// The id every device gives the object of `entityName` whose uniqueness key holds `keyValues`.
    ///
    /// A name-based UUID (RFC 9562 version 8) over SHA-256 of the entity's name and the key's values.
    package static func derived(entityName: String, keyValues: [RecordValue]) -> ManagedObjectID {
        var writer = LogWriter()
        writer.writeString("ubiquity.record.key.v1")
        writer.writeString(entityName)
        for value in keyValues { writer.writeKeyValue(value) }
        var bytes = Array(SHA256.hash(data: writer.bytes).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let uuid = UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
        return ManagedObjectID(entityName: entityName, uuid: uuid)
    }
}

extension UUID {
    /// A random (version 4) UUID from the system's generator: on Linux `UUID()` opens, reads and closes
    /// `/dev/urandom` for each, which cost more than the rest of inserting an object. The generator's bytes are
    /// drawn a page at a time (``RandomPool``): one system call for 256 ids rather than two for each.
    static func random() -> UUID {
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
