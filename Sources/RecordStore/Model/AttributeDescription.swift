import Foundation

/// The type of an attribute's values.
public enum AttributeType: String, Sendable, Hashable, CaseIterable {
    /// `String`.
    case string
    /// `Int16`, kept as a whole number in its range.
    case integer16
    /// `Int32`, kept as a whole number in its range.
    case integer32
    /// `Int64`.
    case integer64
    /// `Double`.
    case double
    /// `Decimal`.
    case decimal
    /// `Bool`.
    case boolean
    /// `Date`.
    case date
    /// `UUID`.
    case uuid
    /// `URL`.
    case uri
    /// `Data`; values larger than ``AttributeDescription/externalStorageThreshold`` are kept beside the database.
    case binaryData

    /// Whether `value` is a value of this type (``RecordValue/null`` is not; optionality is the attribute's).
    public func accepts(_ value: RecordValue) -> Bool {
        switch (self, value) {
        case (.string, .string), (.integer64, .integer), (.double, .double), (.decimal, .decimal),
            (.boolean, .boolean), (.date, .date), (.uuid, .uuid), (.uri, .url), (.binaryData, .data):
            true
        case (.integer16, .integer(let number)): Int16(exactly: number) != nil
        case (.integer32, .integer(let number)): Int32(exactly: number) != nil
        default: false
        }
    }
}

/// One attribute of an entity: a name, a type, and whether it may be empty or has a default.
///
/// ```swift
/// AttributeDescription(name: "title", type: .string, defaultValue: .string(""))
/// ```
public struct AttributeDescription: Sendable, Hashable {
    /// The attribute's name, unique in its entity.
    public var name: String
    /// The type of its values.
    public var type: AttributeType
    /// Whether the attribute may hold no value. A required attribute without a default must be set before a save.
    public var isOptional: Bool
    /// The value a newly inserted object starts with; ``RecordValue/null`` for none.
    public var defaultValue: RecordValue
    /// For binary data: keep values over ``externalStorageThreshold`` bytes in files beside the database.
    public var allowsExternalBinaryDataStorage: Bool

    /// Binary values larger than this many bytes are stored as files of their own when allowed.
    public static let externalStorageThreshold = 64 * 1024

    /// Creates an attribute.
    /// - Parameters:
    ///   - name: The name, unique in its entity.
    ///   - type: The type of its values.
    ///   - isOptional: Whether it may be empty; `false` by default, as Core Data's model editor makes it.
    ///   - defaultValue: The value a new object starts with.
    ///   - allowsExternalBinaryDataStorage: For binary data, whether large values live beside the database.
    public init(
        name: String, type: AttributeType, isOptional: Bool = false, defaultValue: RecordValue = .null,
        allowsExternalBinaryDataStorage: Bool = false
    ) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.defaultValue = defaultValue
        self.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
    }
}
