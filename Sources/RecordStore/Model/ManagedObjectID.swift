import Crypto
import Foundation
import Synchronization
import UbiquityProtocol

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
    /// The UUID's bytes as two big-endian words. Held as plain integers, not as a `UUID`, whose layout this module
    /// does not know: an id holding one was copied and destroyed through its type's runtime witnesses, thousands of
    /// times in a fetch.
    let words: (UInt64, UInt64)
    /// Whether the id lasts only until the object is saved (an inserted object of an entity with a uniqueness key).
    public let isTemporaryID: Bool

    /// The object's global identifier.
    public var uuid: UUID {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) {
            $0.storeBytes(of: words.0.bigEndian, as: UInt64.self)
            $0.storeBytes(of: words.1.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        return UUID(uuid: bytes)
    }

    /// Creates an id.
    public init(entityName: String, uuid: UUID, isTemporaryID: Bool = false) {
        self.entityName = entityName
        self.words = withUnsafeBytes(of: uuid.uuid) {
            (
                UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)),
                UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
        self.isTemporaryID = isTemporaryID
    }

    /// An id whose UUID is `words` (big-endian, as ``words`` holds it).
    init(entityName: String, words: (UInt64, UInt64), isTemporaryID: Bool = false) {
        self.entityName = entityName
        self.words = words
        self.isTemporaryID = isTemporaryID
    }

    /// Whether the two ids have the same UUID.
    func hasSameUUID(as other: ManagedObjectID) -> Bool { words == other.words }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.words == rhs.words && lhs.isTemporaryID == rhs.isTemporaryID && lhs.entityName == rhs.entityName
    }

    /// Hashes the UUID alone: it names one object (ids equal in everything else hash alike), and hashing the entity's
    /// name too was a fifth of a large fetch, which registers every object it reads by id.
    public func hash(into hasher: inout Hasher) {
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
        // Byte order (the words are big-endian), the order of the uppercase text too, without formatting either.
        return lhs.words < rhs.words
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
