/// A position in a container's change feed (or key-value store history), opaque to devices.
///
/// Only the server reads its contents; a device stores the last token it was given and sends it back with
/// `since=`. Written on the wire as a plain string.
public struct ChangeToken: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The opaque text.
    public let string: String

    /// Wraps a token's text.
    public init(_ string: String) { self.string = string }

    public var description: String { string }

    public init(from decoder: any Decoder) throws {
        self.string = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(string)
    }
}
