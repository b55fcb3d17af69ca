import Foundation

/// An identifier backed by a UUID, written on the wire as its lowercase string
/// (`"6f1c…-…"`), and ordered by that string so "the greater id" means the same on every machine.
///
/// ``ItemID``, ``VersionID``, ``DeviceID`` and ``AccountID`` conform; the conformance supplies parsing,
/// `Codable`, `Comparable` and `description`.
public protocol UUIDIdentifier: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The UUID underneath.
    var uuid: UUID { get }
    /// Wraps a UUID.
    init(uuid: UUID)
}

extension UUIDIdentifier {
    /// A new random identifier.
    public init() { self.init(uuid: UUID.random()) }

    /// Parses an identifier from a UUID string (either case; kept in lowercase).
    /// - Throws: ``ProtocolError/Code/invalidIdentifier`` if `string` is not a UUID.
    public init(_ string: String) throws(ProtocolError) {
        guard let uuid = UUIDText.parse(string) else {
            throw ProtocolError(.invalidIdentifier, "\(Self.self) is not a UUID: \"\(string)\"")
        }
        self.init(uuid: uuid)
    }

    /// The lowercase UUID string, as written on the wire.
    public var string: String { UUIDText.format(uuid) }

    public var description: String { string }

    /// The order of the lowercase strings, which is the order of the UUIDs' bytes: hex digits sort by their values
    /// and the hyphens stand at the same places.
    public static func < (lhs: Self, rhs: Self) -> Bool { UUIDText.precedes(lhs.uuid, rhs.uuid) }

    public init(from decoder: any Decoder) throws {
        try self.init(decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(string)
    }
}

/// The text form of UUIDs, written and read without Foundation's formatting and scanning (identifiers are written
/// and read for every record the engine and the service store and send).
enum UUIDText {
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The 36-character lowercase form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    static func format(_ uuid: UUID) -> String {
        withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var at = 0
                for index in 0..<16 {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[at] = UInt8(ascii: "-")
                        at += 1
                    }
                    text[at] = digits[Int(bytes[index] >> 4)]
                    text[at + 1] = digits[Int(bytes[index] & 0x0F)]
                    at += 2
                }
                return 36
            }
        }
    }

    /// Reads the 36-character form in either case; `nil` for anything else.
    static func parse(_ string: String) -> UUID? {
        var string = string
        return string.withUTF8 { text -> UUID? in
            guard text.count == 36 else { return nil }
            var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let parsed = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
                var at = 0
                for index in 0..<16 {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        guard text[at] == UInt8(ascii: "-") else { return false }
                        at += 1
                    }
                    guard let high = value(of: text[at]), let low = value(of: text[at + 1]) else { return false }
                    out[index] = high << 4 | low
                    at += 2
                }
                return true
            }
            return parsed ? UUID(uuid: bytes) : nil
        }
    }

    private static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Whether `lhs` comes before `rhs`, byte by byte.
    static func precedes(_ lhs: UUID, _ rhs: UUID) -> Bool {
        withUnsafeBytes(of: lhs.uuid) { left in
            withUnsafeBytes(of: rhs.uuid) { right in
                for index in 0..<16 where left[index] != right[index] { return left[index] < right[index] }
                return false
            }
        }
    }
}
