/// The identity of a container, written like an iCloud container id: `TEAM.com.example.app`.
///
/// Rules (each refusal is ``ProtocolError/Code/invalidContainerID``): 3–255 characters; only ASCII letters,
/// digits, `.`, `-` and `_`; at least one `.`; no empty dot-separated part (so no leading, trailing or doubled
/// `.`). The id is used as a folder name, `<root>/<container-id>/`, and those rules keep it a safe one.
/// Ids are compared exactly (case-sensitively).
public struct ContainerID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The id as written.
    public let string: String

    /// Validates a container id.
    /// - Throws: ``ProtocolError/Code/invalidContainerID`` naming the broken rule.
    public init(_ string: String) throws(ProtocolError) {
        func refuse(_ why: String) -> ProtocolError {
            ProtocolError(.invalidContainerID, "container id \"\(string)\" \(why)")
        }
        let bytes = Array(string.utf8)
        guard (3...255).contains(bytes.count) else { throw refuse("must be 3 to 255 characters long") }
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                continue
            default:
                throw refuse("may hold only letters, digits, '.', '-' and '_'")
            }
        }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count >= 2 else { throw refuse("must contain a '.'") }
        guard parts.allSatisfy({ !$0.isEmpty }) else { throw refuse("has an empty part between dots") }
        self.string = string
    }

    public var description: String { string }

    public static func < (lhs: ContainerID, rhs: ContainerID) -> Bool { lhs.string < rhs.string }

    public init(from decoder: any Decoder) throws {
        try self.init(decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(string)
    }
}
