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
    public init() { self.init(uuid: UUID()) }

    /// Parses an identifier from a UUID string (either case; kept in lowercase).
    /// - Throws: ``ProtocolError/Code/invalidIdentifier`` if `string` is not a UUID.
    public init(_ string: String) throws(ProtocolError) {
        guard let uuid = UUID(uuidString: string) else {
            throw ProtocolError(.invalidIdentifier, "\(Self.self) is not a UUID: \"\(string)\"")
        }
        self.init(uuid: uuid)
    }

    /// The lowercase UUID string, as written on the wire.
    public var string: String { uuid.uuidString.lowercased() }

    public var description: String { string }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.string < rhs.string }

    public init(from decoder: any Decoder) throws {
        try self.init(decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(string)
    }
}
