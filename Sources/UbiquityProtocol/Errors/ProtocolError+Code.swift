extension ProtocolError {
    /// The kind of a ``ProtocolError``: a stable string used as the error code in HTTP bodies.
    ///
    /// Raw values never change once published. A code this version does not know still decodes (with its raw
    /// value), so a device keeps working against a newer server.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The stable string sent on the wire.
        public let rawValue: String

        /// Creates a code from its wire string.
        public init(rawValue: String) { self.rawValue = rawValue }

        public init(from decoder: any Decoder) throws {
            self.rawValue = try decoder.singleValueContainer().decode(String.self)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }

        public var description: String { rawValue }

        // MARK: Identifiers

        /// A container id is not of the form `TEAM.com.example.app`.
        public static let invalidContainerID = Code(rawValue: "invalidContainerID")
        /// An item, version, device or account id is not a UUID.
        public static let invalidIdentifier = Code(rawValue: "invalidIdentifier")
        /// A chunk hash is not 64 lowercase hexadecimal characters.
        public static let invalidChunkHash = Code(rawValue: "invalidChunkHash")

        // MARK: Paths

        /// An item path is empty.
        public static let pathEmpty = Code(rawValue: "pathEmpty")
        /// An item path starts with `/`.
        public static let pathAbsolute = Code(rawValue: "pathAbsolute")
        /// An item path contains NUL or another control character.
        public static let pathControlCharacter = Code(rawValue: "pathControlCharacter")
        /// An item path has an empty component (`a//b`, a trailing `/`).
        public static let pathComponentEmpty = Code(rawValue: "pathComponentEmpty")
        /// An item path has a `.` or `..` component.
        public static let pathComponentDot = Code(rawValue: "pathComponentDot")
        /// A component of an item path is longer than 255 UTF-8 bytes.
        public static let pathComponentTooLong = Code(rawValue: "pathComponentTooLong")
        /// An item path is longer than 1024 UTF-8 bytes.
        public static let pathTooLong = Code(rawValue: "pathTooLong")
        /// An item path is inside the container's private `.ubiquity/` folder.
        public static let pathReserved = Code(rawValue: "pathReserved")
        /// An item path differs from an existing sibling only by case or Unicode normalisation
        /// (see ``ItemPath/collisionKey``).
        public static let pathCollision = Code(rawValue: "pathCollision")

        // MARK: Records

        /// A content manifest is inconsistent (negative sizes, a size overflow, duplicate or ill-kinded entries).
        public static let invalidManifest = Code(rawValue: "invalidManifest")
        /// A record contradicts itself (for example a size that is not its manifest's total).
        public static let invalidRecord = Code(rawValue: "invalidRecord")
        /// A timestamp is not in the wire form (see ``WireTimestamp``).
        public static let invalidTimestamp = Code(rawValue: "invalidTimestamp")

        // MARK: Change feed

        /// A change token is unknown or has expired; the device must resync from scratch.
        public static let changeTokenExpired = Code(rawValue: "changeTokenExpired")

        // MARK: Key-value store

        /// A property-list value is not in the documented JSON form.
        public static let invalidPropertyListValue = Code(rawValue: "invalidPropertyListValue")
        /// A key-value key is empty or longer than ``KeyValueLimits/maximumKeyBytes``.
        public static let keyValueKeyTooLong = Code(rawValue: "keyValueKeyTooLong")
        /// A key-value store would hold more than ``KeyValueLimits/maximumKeyCount`` keys.
        public static let keyValueTooManyKeys = Code(rawValue: "keyValueTooManyKeys")
        /// A key-value store would be larger than ``KeyValueLimits/maximumTotalBytes``.
        public static let keyValueStoreTooLarge = Code(rawValue: "keyValueStoreTooLarge")
    }
}
