import Foundation

/// Where reading a row puts its values: an array of them for one object's snapshot, ``PackedValues`` for the
/// thousands of rows of a fetch. The typed calls let a row's plain columns go in without an enum in between.
protocol RecordValueSink {
    /// How many values are in.
    var count: Int { get }
    mutating func append(_ value: RecordValue)
    mutating func appendInteger(_ number: Int64)
    mutating func appendDouble(_ number: Double)
    /// A date as seconds since the reference date.
    mutating func appendDate(_ seconds: Double)
    mutating func appendBoolean(_ value: Bool)
    /// Text as its UTF-8 bytes, which the sink copies (decoded as `String(decoding:as:)` does).
    mutating func appendText(_ bytes: UnsafeBufferPointer<UInt8>)
    /// Replaces the value at `index` (an attribute's default for a column that turned out never set).
    mutating func replace(at index: Int, with value: RecordValue)
}

extension Array: RecordValueSink where Element == RecordValue {
    mutating func appendInteger(_ number: Int64) { append(.integer(number)) }
    mutating func appendDouble(_ number: Double) { append(.double(number)) }
    mutating func appendDate(_ seconds: Double) { append(.date(Date(timeIntervalSinceReferenceDate: seconds))) }
    mutating func appendBoolean(_ value: Bool) { append(.boolean(value)) }
    mutating func appendText(_ bytes: UnsafeBufferPointer<UInt8>) {
        append(.string(String(decoding: bytes, as: UTF8.self)))
    }
    mutating func replace(at index: Int, with value: RecordValue) { self[index] = value }
}

/// Values kept as plain words: a kind and 8 bytes each, short text back to back in one buffer, and only what is
/// neither (long text, bytes, decimals, URLs, UUIDs, objects) as ``RecordValue``s.
///
/// A fetch of thousands of rows reads its values into these. As ``RecordValue``s, 40 bytes each, releasing them
/// went through the enum's destroy for every value, and that was a fifth of what a large fetch spent outside SQLite;
/// here the words and text are released as a whole, and a value is made again when it is read.
struct PackedValues: RecordValueSink {
    private enum Kind: UInt8 {
        case null, integer, double, date, boolean
        /// Text of at most ``shortText`` bytes in ``text``: the word is its offset shifted left by 8 and its count.
        case text
        /// A value of ``others``: the word is its index.
        case other
    }

    /// The longest text kept in ``text``: text this short makes a `String` without allocating when read.
    private static let shortText = 15

    private var kinds: [UInt8] = []
    private var words: [UInt64] = []
    private var text: [UInt8] = []
    private var others: [RecordValue] = []

    var count: Int { kinds.count }

    /// Makes room for `count` values in all.
    mutating func reserveCapacity(_ count: Int) {
        kinds.reserveCapacity(count)
        words.reserveCapacity(count)
    }

    /// The value at `index`.
    subscript(index: Int) -> RecordValue {
        let word = words[index]
        switch Kind(rawValue: kinds[index]) {
        case .null, nil: return .null
        case .integer: return .integer(Int64(bitPattern: word))
        case .double: return .double(Double(bitPattern: word))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: word)))
        case .boolean: return .boolean(word != 0)
        case .text:
            let start = Int(word >> 8)
            let count = Int(word & 0xFF)
            return .string(
                text.withUnsafeBufferPointer {
                    String(decoding: UnsafeBufferPointer(rebasing: $0[start..<start + count]), as: UTF8.self)
                })
        case .other: return others[Int(word)]
        }
    }

    private mutating func append(_ kind: Kind, _ word: UInt64) {
        kinds.append(kind.rawValue)
        words.append(word)
    }

    /// The kind and word of `value`, its text or itself kept beside the words where it goes there.
    private mutating func packed(_ value: RecordValue) -> (Kind, UInt64) {
        switch value {
        case .null: return (.null, 0)
        case .integer(let number): return (.integer, UInt64(bitPattern: number))
        case .double(let number): return (.double, number.bitPattern)
        case .date(let date): return (.date, date.timeIntervalSinceReferenceDate.bitPattern)
        case .boolean(let flag): return (.boolean, flag ? 1 : 0)
        case .string(var string) where string.utf8.count <= Self.shortText:
            return string.withUTF8 { packed(text: $0) }
        default:
            others.append(value)
            return (.other, UInt64(others.count - 1))
        }
    }

    private mutating func packed(text bytes: UnsafeBufferPointer<UInt8>) -> (Kind, UInt64) {
        guard bytes.count <= Self.shortText else {
            others.append(.string(String(decoding: bytes, as: UTF8.self)))
            return (.other, UInt64(others.count - 1))
        }
        defer { text.append(contentsOf: bytes) }
        return (.text, UInt64(text.count) << 8 | UInt64(bytes.count))
    }

    mutating func append(_ value: RecordValue) {
        let (kind, word) = packed(value)
        append(kind, word)
    }

    mutating func appendInteger(_ number: Int64) { append(.integer, UInt64(bitPattern: number)) }
    mutating func appendDouble(_ number: Double) { append(.double, number.bitPattern) }
    mutating func appendDate(_ seconds: Double) { append(.date, seconds.bitPattern) }
    mutating func appendBoolean(_ value: Bool) { append(.boolean, value ? 1 : 0) }

    mutating func appendText(_ bytes: UnsafeBufferPointer<UInt8>) {
        let (kind, word) = packed(text: bytes)
        append(kind, word)
    }

    mutating func replace(at index: Int, with value: RecordValue) {
        // The value replaced is a column's NULL, which keeps nothing beside the words.
        let (kind, word) = packed(value)
        kinds[index] = kind.rawValue
        words[index] = word
    }
}
