import Foundation

/// A property's value as the store keeps it: an attribute's value, a to-one relationship's object, or nothing.
///
/// Values compare and hash by content, so two devices that merge the same logs hold equal values.
public enum RecordValue: Sendable, Hashable, CustomStringConvertible {
    /// No value (an optional attribute left empty, or a to-one relationship set to nothing).
    case null
    /// Text.
    case string(String)
    /// A whole number, for the 16-, 32- and 64-bit integer attribute types.
    case integer(Int64)
    /// A floating-point number.
    case double(Double)
    /// A decimal number, exact in base ten.
    case decimal(Decimal)
    /// A Boolean.
    case boolean(Bool)
    /// A moment in time.
    case date(Date)
    /// A UUID.
    case uuid(UUID)
    /// A URL.
    case url(URL)
    /// Bytes; large values are kept beside the database as files of their own.
    case data(Data)
    /// The object a to-one relationship points at.
    case object(ManagedObjectID)

    /// Whether this is ``null``.
    public var isNull: Bool { if case .null = self { true } else { false } }

    public var description: String {
        switch self {
        case .null: "nil"
        case .string(let value): String(reflecting: value)
        case .integer(let value): "\(value)"
        case .double(let value): "\(value)"
        case .decimal(let value): "\(value)"
        case .boolean(let value): "\(value)"
        case .date(let value): "\(value.timeIntervalSinceReferenceDate)"
        case .uuid(let value): value.uuidString
        case .url(let value): value.absoluteString
        case .data(let value): "\(value.count) bytes"
        case .object(let value): "\(value)"
        }
    }
}

extension Decimal {
    /// The number as text that ``init(canonicalText:)`` reads back, not-a-number included.
    package var canonicalText: String { isNaN ? "NaN" : description }

    /// Reads ``canonicalText``.
    package init?(canonicalText text: String) {
        if text == "NaN" {
            self = .nan
            return
        }
        guard let number = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else { return nil }
        self = number
    }
}
