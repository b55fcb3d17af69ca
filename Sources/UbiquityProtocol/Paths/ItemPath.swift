import Foundation

/// A validated path of an item relative to its container's root, such as `Documents/Trip/List.grocery`.
///
/// Rules, checked in this order, each refused with its own ``ProtocolError/Code``:
///
/// | rule | code |
/// | --- | --- |
/// | not empty | ``ProtocolError/Code/pathEmpty`` |
/// | does not start with `/` | ``ProtocolError/Code/pathAbsolute`` |
/// | no NUL or other control character (U+0000–U+001F, U+007F–U+009F) | ``ProtocolError/Code/pathControlCharacter`` |
/// | no empty component (`a//b`, a trailing `/`) | ``ProtocolError/Code/pathComponentEmpty`` |
/// | no `.` or `..` component | ``ProtocolError/Code/pathComponentDot`` |
/// | each component at most 255 UTF-8 bytes | ``ProtocolError/Code/pathComponentTooLong`` |
/// | the whole path at most 1024 UTF-8 bytes | ``ProtocolError/Code/pathTooLong`` |
/// | not the private `.ubiquity` folder or inside it (compared by ``collisionKey``) | ``ProtocolError/Code/pathReserved`` |
///
/// The path is stored in Unicode NFC, and lengths are measured on that form, so the two spellings of "é"
/// (U+00E9, and "e" + U+0301) make the same `ItemPath` with the same bytes on the wire.
///
/// **Siblings that differ only by case or normalisation.** Two items whose paths have the same ``collisionKey``
/// may not exist in one container at once: the server refuses the second with
/// ``ProtocolError/Code/pathCollision``. This keeps a container usable on case-insensitive file systems.
///
/// ```swift
/// let path = try ItemPath("Documents/Cafe\u{301}.txt")
/// path.string      // "Documents/Café.txt" (NFC)
/// path.isDocument  // true
/// ```
public struct ItemPath: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The most UTF-8 bytes one component may have.
    public static let maximumComponentBytes = 255
    /// The most UTF-8 bytes a whole path may have.
    public static let maximumPathBytes = 1024
    /// The container's private folder, which no item may be in.
    public static let reservedFolderName = ".ubiquity"

    /// The path in NFC, components separated by `/`.
    public let string: String

    /// Validates and normalises a relative path.
    /// - Throws: ``ProtocolError`` with the code of the first rule `string` breaks (see the table above).
    public init(_ string: String) throws(ProtocolError) {
        func refuse(_ code: ProtocolError.Code, _ why: String) -> ProtocolError {
            ProtocolError(code, "item path \"\(Self.printable(string))\" \(why)")
        }
        guard !string.isEmpty else { throw refuse(.pathEmpty, "is empty") }
        guard !string.hasPrefix("/") else { throw refuse(.pathAbsolute, "is absolute") }
        guard !string.unicodeScalars.contains(where: Self.isControl) else {
            throw refuse(.pathControlCharacter, "contains a control character")
        }
        let normalized = Self.isASCII(string) ? string : string.precomposedStringWithCanonicalMapping
        let components = normalized.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        for component in components {
            guard !component.isEmpty else { throw refuse(.pathComponentEmpty, "has an empty component") }
            guard !component.elementsEqual(".".utf8), !component.elementsEqual("..".utf8) else {
                throw refuse(.pathComponentDot, "has a '.' or '..' component")
            }
            guard component.count <= Self.maximumComponentBytes else {
                throw refuse(.pathComponentTooLong, "has a component longer than \(Self.maximumComponentBytes) bytes")
            }
        }
        guard normalized.utf8.count <= Self.maximumPathBytes else {
            throw refuse(.pathTooLong, "is longer than \(Self.maximumPathBytes) bytes")
        }
        let first = String(decoding: components[0], as: UTF8.self)
        guard Self.collisionKey(of: first) != Self.reservedFolderName else {
            throw refuse(.pathReserved, "is inside the private \(Self.reservedFolderName) folder")
        }
        self.string = normalized
    }

    /// The components, first to last.
    public var components: [String] { string.split(separator: "/").map(String.init) }

    /// The last component: the item's name.
    public var name: String {
        String(string[(string.lastIndex(of: "/").map(string.index(after:)) ?? string.startIndex)...])
    }

    /// The folder holding the item, or `nil` for an item at the container's root.
    public var parent: ItemPath? {
        guard let slash = string.lastIndex(of: "/") else { return nil }
        return ItemPath(validated: String(string[..<slash]))
    }

    /// The folders above the item, outermost first: `a/b/c` has `a` and `a/b`.
    public var ancestors: [ItemPath] {
        var result: [ItemPath] = []
        var next = parent
        while let folder = next {
            result.append(folder)
            next = folder.parent
        }
        return result.reversed()
    }

    /// Whether the item is in the documents scope: its first component is `Documents`.
    public var isDocument: Bool { string == "Documents" || string.hasPrefix("Documents/") }

    /// The key two sibling paths must not share: the path in NFC, case-folded (locale-independent full case
    /// folding, so "Straße" and "STRASSE" clash), then NFC again.
    ///
    /// The rule a server applies when an item is created or moved to `path`: for `path` and each of its
    /// ``ancestors``, if an existing live item has the same key but a different ``string``, refuse with
    /// ``ProtocolError/Code/pathCollision``. (So `documents/b` is refused beside an existing `Documents/`.)
    public var collisionKey: String { Self.collisionKey(of: string) }

    /// Whether `self` is `other` or inside it.
    public func isEqualOrDescendant(of other: ItemPath) -> Bool {
        string == other.string || string.hasPrefix(other.string + "/")
    }

    /// A path one level deeper.
    /// - Throws: ``ProtocolError`` if `component` or the result breaks a rule (a `/` in `component` makes
    ///   several components, each checked).
    public func appending(_ component: String) throws(ProtocolError) -> ItemPath {
        try ItemPath(string + "/" + component)
    }

    public var description: String { string }

    /// Orders paths by their NFC UTF-8 bytes, so a parent sorts before its children.
    public static func < (lhs: ItemPath, rhs: ItemPath) -> Bool {
        lhs.string.utf8.lexicographicallyPrecedes(rhs.string.utf8)
    }

    /// Compares the stored NFC bytes (Swift's `String ==` would equate canonically equivalent spellings,
    /// which is the same here because the storage is already NFC).
    public static func == (lhs: ItemPath, rhs: ItemPath) -> Bool { lhs.string.utf8.elementsEqual(rhs.string.utf8) }

    public func hash(into hasher: inout Hasher) { hasher.combine(string) }

    public init(from decoder: any Decoder) throws {
        try self.init(decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(string)
    }

    private init(validated: String) { self.string = validated }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    static func collisionKey(of text: String) -> String {
        // ASCII is already NFC, and its full case folding is its lower case: the common case, done without Foundation.
        if isASCII(text) {
            return String(decoding: text.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
        }
        return text.precomposedStringWithCanonicalMapping.folding(options: [.caseInsensitive], locale: nil)
            .precomposedStringWithCanonicalMapping
    }

    private static func isASCII(_ text: String) -> Bool { text.utf8.allSatisfy { $0 < 0x80 } }

    private static func printable(_ text: String) -> String {
        let escaped = text.unicodeScalars.map { isControl($0) ? "\\u{\(String($0.value, radix: 16))}" : String($0) }
        let joined = escaped.joined()
        return joined.count > 100 ? joined.prefix(100) + "…" : joined
    }
}
