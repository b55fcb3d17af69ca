import Foundation

/// Where reading a row puts its values: an array of them for one object's snapshot, ``PackedRowsBuilder`` for the
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

/// Rows a fetch read, one after another, each an id and a value per property of its entity's layout: a segment of
/// ``FetchedRows``, which the snapshots of its rows share.
///
/// Values are kept as plain words: a kind and 8 bytes each, short text back to back in one buffer, and only what is
/// neither (long text, bytes, decimals, URLs, UUIDs, objects) as ``RecordValue``s. As ``RecordValue``s, 40 bytes
/// each, releasing them went through the enum's destroy for every value, a fifth of what a large fetch spent outside
/// SQLite; here the words are freed as a whole, and a value is made again when it is read. The kinds, words and ids
/// are buffers of their own, written by ``PackedRowsBuilder`` without the checks an array makes at each append (that
/// it is uniquely referenced and has room), which were a sixth of a large fetch outside SQLite.
///
/// A segment is written only while a fetch reads its rows, before any snapshot refers to it, and only read after.
final class SnapshotRows: @unchecked Sendable {
    let layout: SnapshotLayout
    /// Room for values and rows.
    fileprivate let valueCapacity: Int
    fileprivate let rowCapacity: Int
    fileprivate let kinds: UnsafeMutablePointer<UInt8>
    fileprivate let words: UnsafeMutablePointer<UInt64>
    /// Each row's id, as ``ManagedObjectID``'s words.
    fileprivate let ids: UnsafeMutablePointer<(UInt64, UInt64)>
    /// How many rows and values the segment holds.
    fileprivate(set) var rowCount = 0
    fileprivate(set) var valueCount = 0
    fileprivate var text: [UInt8] = []
    fileprivate var others: [RecordValue] = []

    fileprivate init(layout: SnapshotLayout, rows: Int) {
        self.layout = layout
        rowCapacity = max(1, rows)
        valueCapacity = rowCapacity * max(1, layout.properties.count)
        kinds = .allocate(capacity: valueCapacity)
        words = .allocate(capacity: valueCapacity)
        ids = .allocate(capacity: rowCapacity)
    }

    deinit {
        kinds.deallocate()
        words.deallocate()
        ids.deallocate()
    }

    fileprivate enum Kind: UInt8 {
        case null, integer, double, date, boolean
        /// Text of at most ``shortText`` bytes in ``text``: the word is its offset shifted left by 8 and its count.
        case text
        /// A value of ``others``: the word is its index.
        case other
    }

    /// The longest text kept in ``text``: text this short makes a `String` without allocating when read.
    fileprivate static let shortText = 15

    /// The words of the id of the row at `row`.
    func idWords(at row: Int) -> (UInt64, UInt64) { ids[row] }

    /// The value at `index`, counted over the rows' values one after another.
    subscript(index: Int) -> RecordValue {
        precondition(index >= 0 && index < valueCount, "a value of the segment")
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
}

/// Writes the rows of a ``SnapshotRows`` as a fetch reads them: its values through ``RecordValueSink``, then each
/// row's id (``endRow(id:)``). The segment grows (to twice its room) when full; ``seal()`` hands it over.
///
/// A copy writes into the same buffers as the original: a builder is moved (``FetchedRows`` takes it out of its
/// optional to write), never copied and written twice. (Not `~Copyable`: ``FetchedRows``, which holds one, is handed
/// out of a database read, whose result must be copyable.)
struct PackedRowsBuilder: RecordValueSink {
    private var rows: SnapshotRows
    private var valueCount = 0
    private var rowCount = 0
    private var text: [UInt8] = []
    private var others: [RecordValue] = []

    /// A segment with room for `rows` rows.
    init(layout: SnapshotLayout, rows: Int) {
        self.rows = SnapshotRows(layout: layout, rows: rows)
    }

    var count: Int { valueCount }
    /// How many rows are complete.
    var rowsWritten: Int { rowCount }

    /// Moves everything to a segment with room for `rows` rows.
    private mutating func grow(toHold rowsNeeded: Int) {
        var capacity = rows.rowCapacity
        while capacity < rowsNeeded { capacity *= 2 }
        let larger = SnapshotRows(layout: rows.layout, rows: capacity)
        larger.kinds.update(from: rows.kinds, count: valueCount)
        larger.words.update(from: rows.words, count: valueCount)
        larger.ids.update(from: rows.ids, count: rowCount)
        rows = larger
    }

    private mutating func append(_ kind: SnapshotRows.Kind, _ word: UInt64) {
        if valueCount == rows.valueCapacity { grow(toHold: rowCount + 2) }
        rows.kinds[valueCount] = kind.rawValue
        rows.words[valueCount] = word
        valueCount += 1
    }

    /// Ends a row whose values were appended: its id's words.
    mutating func endRow(id: (UInt64, UInt64)) {
        if rowCount == rows.rowCapacity { grow(toHold: rowCount + 1) }
        rows.ids[rowCount] = id
        rowCount += 1
    }

    /// The segment, holding what was written.
    consuming func seal() -> SnapshotRows {
        rows.rowCount = rowCount
        rows.valueCount = valueCount
        rows.text = text
        rows.others = others
        return rows
    }

    /// The kind and word of `value`, its text or itself kept beside the words where it goes there.
    private mutating func packed(_ value: RecordValue) -> (SnapshotRows.Kind, UInt64) {
        switch value {
        case .null: return (.null, 0)
        case .integer(let number): return (.integer, UInt64(bitPattern: number))
        case .double(let number): return (.double, number.bitPattern)
        case .date(let date): return (.date, date.timeIntervalSinceReferenceDate.bitPattern)
        case .boolean(let flag): return (.boolean, flag ? 1 : 0)
        case .string(var string) where string.utf8.count <= SnapshotRows.shortText:
            return string.withUTF8 { packed(text: $0) }
        default:
            others.append(value)
            return (.other, UInt64(others.count - 1))
        }
    }

    private mutating func packed(text bytes: UnsafeBufferPointer<UInt8>) -> (SnapshotRows.Kind, UInt64) {
        guard bytes.count <= SnapshotRows.shortText else {
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
        precondition(index >= 0 && index < valueCount, "a value written")
        // The value replaced is a column's NULL, which keeps nothing beside the words.
        let (kind, word) = packed(value)
        rows.kinds[index] = kind.rawValue
        rows.words[index] = word
    }
}
