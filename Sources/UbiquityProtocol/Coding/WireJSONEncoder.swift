import Foundation

/// Encodes values as JSON the way Foundation's `JSONEncoder` does with `.withoutEscapingSlashes` (and, when
/// ``sortsKeys``, `.sortedKeys`): the same bytes, keys sorted as it sorts them, strings escaped as it escapes them.
/// Without sorting, an object's keys come in the order they were encoded (Foundation's own order is its
/// dictionary's, which changes from process to process).
///
/// Foundation builds a tree of values, an object a dictionary, and asks of every value whether it is a date, a URL
/// or bytes before encoding it; a version record took about 12 µs, and records, answers and stored rows are encoded
/// for every commit the service takes and every item the engine records. Here a string or a number is written into
/// one buffer as it is encoded, an object is a list of its keys and where their values lie, and special types are
/// told apart by comparing types. What this encoder does not write itself — floating-point numbers, dates, bytes,
/// URLs, decimals, a value that encodes nothing — it leaves to Foundation's encoder, which encodes the whole value.
package struct WireJSONEncoder: Sendable {
    /// Whether objects' keys are sorted, as `.sortedKeys` sorts them.
    package var sortsKeys: Bool

    package init(sortsKeys: Bool = false) {
        self.sortsKeys = sortsKeys
    }

    /// The JSON text of `value`.
    /// - Throws: What `value`'s encoding throws, or Foundation's `EncodingError`.
    package func encode<T: Encodable>(_ value: T) throws -> Data {
        if let writable = value as? any WireJSONWritable {
            var writer = WireJSONWriter(sortsKeys: sortsKeys)
            do {
                try writable.writeWireJSON(to: &writer)
                return Data(writer.bytes)
            } catch is JSONEncodingFallback {
                return try (sortsKeys ? Self.sortingFallback : Self.fallback).encode(value)
            }
        }
        let state = JSONEncodingState(sortsKeys: sortsKeys)
        let node: JSONNode
        do {
            node = try state.node(for: value, path: nil)
            if state.fallsBack { throw JSONEncodingFallback() }
        } catch is JSONEncodingFallback {
            return try (sortsKeys ? Self.sortingFallback : Self.fallback).encode(value)
        }
        var output: [UInt8] = []
        output.reserveCapacity(state.scratch.count + 64)
        state.write(node, to: &output)
        return Data(output)
    }

    private static let fallback: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()

    private static let sortingFallback: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

/// A type that writes its JSON itself, as its `Encodable` conformance encodes it with sorted keys: the records
/// encoded for every commit, whose encoding through `Encodable`'s containers was most of its cost.
package protocol WireJSONWritable: Encodable {
    /// Writes the value, keys in sorted order and fields left out as `encode(to:)` leaves them out.
    func writeWireJSON(to writer: inout WireJSONWriter) throws
}

/// Where a ``WireJSONWritable`` writes: objects and arrays opened and closed in turn, commas written between their
/// members.
package struct WireJSONWriter {
    package private(set) var bytes: [UInt8] = []
    let sortsKeys: Bool
    /// A bit per open container: whether its next member is its first.
    private var firstFlags: UInt64 = 0
    private var depth = 0
    /// Whether a key was just written, so that its value needs no comma.
    private var afterKey = false

    init(sortsKeys: Bool) {
        self.sortsKeys = sortsKeys
        bytes.reserveCapacity(512)
    }

    private mutating func separate() {
        if afterKey {
            afterKey = false
            return
        }
        guard depth > 0 else { return }
        let bit: UInt64 = 1 << UInt64(depth)
        if firstFlags & bit != 0 {
            firstFlags &= ~bit
        } else {
            bytes.append(UInt8(ascii: ","))
        }
    }

    package mutating func openObject() { open(UInt8(ascii: "{")) }
    package mutating func closeObject() { close(UInt8(ascii: "}")) }
    package mutating func openArray() { open(UInt8(ascii: "[")) }
    package mutating func closeArray() { close(UInt8(ascii: "]")) }

    private mutating func open(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
        depth += 1
        precondition(depth < 64, "JSON nested too deep for the writer")
        firstFlags |= 1 << UInt64(depth)
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        firstFlags &= ~(1 << UInt64(depth))
        depth -= 1
    }

    /// Writes a member's key; its value follows.
    package mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    package mutating func string(_ text: String) {
        separate()
        JSONEncodingState.appendString(text, to: &bytes)
    }

    package mutating func integer(_ value: Int64) {
        separate()
        JSONEncodingState.appendDecimal(value, to: &bytes)
    }

    package mutating func bool(_ value: Bool) {
        separate()
        let literal: StaticString = value ? "true" : "false"
        literal.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Leaves the whole value to Foundation's encoder.
    package func fallBack() throws -> Never { throw JSONEncodingFallback() }

    /// Writes a value that writes itself.
    package mutating func value(_ value: some WireJSONWritable) throws {
        try value.writeWireJSON(to: &self)
    }

    /// Writes any encodable value, through its `Encodable` conformance.
    package mutating func encodable<T: Encodable>(_ value: T) throws {
        if let writable = value as? any WireJSONWritable {
            try writable.writeWireJSON(to: &self)
            return
        }
        let state = JSONEncodingState(sortsKeys: sortsKeys)
        let node = try state.node(for: value, path: nil)
        if state.fallsBack { throw JSONEncodingFallback() }
        separate()
        state.write(node, to: &bytes)
    }
}

/// Thrown inside the encoder for what it leaves to Foundation's.
private struct JSONEncodingFallback: Error {}

/// What a value encoded as: a string, number, Boolean or null written in the scratch buffer, or a container.
private enum JSONNode {
    case scalar(start: Int, end: Int)
    case object(JSONObjectNode)
    case array(JSONArrayNode)
}

private final class JSONObjectNode {
    var keys: [String] = []
    var values: [JSONNode] = []

    /// Sets `key`'s value; a key encoded again keeps its place and takes the later value, as Foundation's does.
    func set(_ value: JSONNode, for key: String) {
        if let index = keys.firstIndex(of: key) {
            values[index] = value
        } else {
            keys.append(key)
            values.append(value)
        }
    }
}

private final class JSONArrayNode {
    var values: [JSONNode] = []
}

/// One encoding's buffer of scalars and its options.
private final class JSONEncodingState {
    let sortsKeys: Bool
    var scratch: [UInt8] = []
    /// Set when something asked for what Foundation's encoder does (a super encoder): the value is encoded there.
    private(set) var fallsBack = false

    init(sortsKeys: Bool) {
        self.sortsKeys = sortsKeys
        scratch.reserveCapacity(256)
    }

    /// An encoder whose every use stops the encoding, and a mark that Foundation's encoder is to encode the value
    /// even if nothing is encoded through it.
    func fallBack() -> any Encoder {
        fallsBack = true
        return JSONFallbackEncoder()
    }

    // MARK: Scalars

    func string(_ text: String) -> JSONNode {
        let start = scratch.count
        Self.appendString(text, to: &scratch)
        return .scalar(start: start, end: scratch.count)
    }

    func literal(_ text: StaticString) -> JSONNode {
        let start = scratch.count
        text.withUTF8Buffer { scratch.append(contentsOf: $0) }
        return .scalar(start: start, end: scratch.count)
    }

    func bool(_ value: Bool) -> JSONNode { literal(value ? "true" : "false") }

    func null() -> JSONNode { literal("null") }

    func integer(_ value: some BinaryInteger) -> JSONNode {
        let start = scratch.count
        if let small = Int64(exactly: value) {
            Self.appendDecimal(small, to: &scratch)
        } else {
            scratch.append(contentsOf: String(value).utf8)
        }
        return .scalar(start: start, end: scratch.count)
    }

    /// What `value` encodes as.
    func node<T: Encodable>(for value: T, path: JSONCodingPath?) throws -> JSONNode {
        // Told apart by type, not by casting: a cast to each type in turn cost more than writing the value.
        if T.self == String.self { return string(unsafeBitCast(value, to: String.self)) }
        if T.self == Bool.self { return bool(unsafeBitCast(value, to: Bool.self)) }
        if T.self == Int.self { return integer(unsafeBitCast(value, to: Int.self)) }
        if T.self == Int64.self { return integer(unsafeBitCast(value, to: Int64.self)) }
        if T.self == UInt64.self { return integer(unsafeBitCast(value, to: UInt64.self)) }
        if T.self == Int32.self { return integer(unsafeBitCast(value, to: Int32.self)) }
        if T.self == UInt32.self { return integer(unsafeBitCast(value, to: UInt32.self)) }
        if T.self == Int16.self { return integer(unsafeBitCast(value, to: Int16.self)) }
        if T.self == UInt16.self { return integer(unsafeBitCast(value, to: UInt16.self)) }
        if T.self == Int8.self { return integer(unsafeBitCast(value, to: Int8.self)) }
        if T.self == UInt8.self { return integer(unsafeBitCast(value, to: UInt8.self)) }
        if T.self == UInt.self { return integer(unsafeBitCast(value, to: UInt.self)) }
        if let writable = value as? any WireJSONWritable {
            var writer = WireJSONWriter(sortsKeys: sortsKeys)
            try writable.writeWireJSON(to: &writer)
            let start = scratch.count
            scratch.append(contentsOf: writer.bytes)
            return .scalar(start: start, end: scratch.count)
        }
        // Foundation writes these by its strategies and its own number formatting.
        if T.self == Double.self || T.self == Float.self || T.self == Date.self || T.self == Data.self
            || T.self == URL.self || T.self == Decimal.self
        {
            throw JSONEncodingFallback()
        }
        let encoder = JSONValueEncoder(state: self, path: path)
        try value.encode(to: encoder)
        // A value that encoded nothing: Foundation writes `{}`, or refuses it at the top.
        guard let node = encoder.node else { throw JSONEncodingFallback() }
        return node
    }

    // MARK: Writing

    func write(_ node: JSONNode, to output: inout [UInt8]) {
        switch node {
        case .scalar(let start, let end):
            output.append(contentsOf: scratch[start..<end])
        case .array(let array):
            output.append(UInt8(ascii: "["))
            for (index, value) in array.values.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(value, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            if sortsKeys, !Self.isSorted(object.keys) {
                let order = object.keys.indices.sorted { object.keys[$0] < object.keys[$1] }
                for (place, index) in order.enumerated() {
                    writeMember(object.keys[index], object.values[index], first: place == 0, to: &output)
                }
            } else {
                for index in object.keys.indices {
                    writeMember(object.keys[index], object.values[index], first: index == 0, to: &output)
                }
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private func writeMember(_ key: String, _ value: JSONNode, first: Bool, to output: inout [UInt8]) {
        if !first { output.append(UInt8(ascii: ",")) }
        Self.appendString(key, to: &output)
        output.append(UInt8(ascii: ":"))
        write(value, to: &output)
    }

    private static func isSorted(_ keys: [String]) -> Bool {
        guard keys.count > 1 else { return true }
        for index in 1..<keys.count where !(keys[index - 1] < keys[index]) { return false }
        return true
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped as Foundation escapes them,
    /// everything else (slashes, non-ASCII) as it is.
    static func appendString(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var runStart = 0
            for index in 0..<bytes.count {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                runStart = index + 1
                output.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""): output.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): output.append(UInt8(ascii: "\\"))
                case 0x08: output.append(UInt8(ascii: "b"))
                case 0x09: output.append(UInt8(ascii: "t"))
                case 0x0A: output.append(UInt8(ascii: "n"))
                case 0x0C: output.append(UInt8(ascii: "f"))
                case 0x0D: output.append(UInt8(ascii: "r"))
                default:
                    let digits: [UInt8] = Array("0123456789abcdef".utf8)
                    output.append(contentsOf: [
                        UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), digits[Int(byte >> 4)],
                        digits[Int(byte & 0xF)],
                    ])
                }
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
        }
        output.append(UInt8(ascii: "\""))
    }

    /// The decimal digits of `value`, written without making a string.
    static func appendDecimal(_ value: Int64, to output: inout [UInt8]) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        // The magnitude as unsigned, so that the most negative value has one.
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for the 20 digits of the largest, written backwards
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                count += 1
                buffer[buffer.count - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            output.append(contentsOf: buffer[(buffer.count - count)...])
        }
    }
}

/// The keys leading to a value, kept as links to the parent's and made into an array only when asked for.
private final class JSONCodingPath {
    let parent: JSONCodingPath?
    let key: any CodingKey

    init(parent: JSONCodingPath?, key: any CodingKey) {
        self.parent = parent
        self.key = key
    }

    static func keys(of path: JSONCodingPath?) -> [any CodingKey] {
        var keys: [any CodingKey] = []
        var link = path
        while let current = link {
            keys.append(current.key)
            link = current.parent
        }
        return keys.reversed()
    }
}

/// An index in an array as a coding key.
private struct JSONIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

/// The encoder one value is encoded with.
private final class JSONValueEncoder: Encoder {
    let state: JSONEncodingState
    let path: JSONCodingPath?
    /// What the value encoded as, once it has.
    var node: JSONNode?

    init(state: JSONEncodingState, path: JSONCodingPath?) {
        self.state = state
        self.path = path
    }

    var codingPath: [any CodingKey] { JSONCodingPath.keys(of: path) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: JSONObjectNode
        if case .object(let existing)? = node {
            object = existing
        } else {
            precondition(node == nil, "a value encodes one container")
            object = JSONObjectNode()
            node = .object(object)
        }
        return KeyedEncodingContainer(JSONKeyedContainer<Key>(state: state, object: object, path: path))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: JSONArrayNode
        if case .array(let existing)? = node {
            array = existing
        } else {
            precondition(node == nil, "a value encodes one container")
            array = JSONArrayNode()
            node = .array(array)
        }
        return JSONUnkeyedContainer(state: state, array: array, path: path)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        JSONSingleValueContainer(encoder: self)
    }
}

private struct JSONKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let state: JSONEncodingState
    let object: JSONObjectNode
    let path: JSONCodingPath?

    var codingPath: [any CodingKey] { JSONCodingPath.keys(of: path) }

    mutating func encodeNil(forKey key: Key) throws { object.set(state.null(), for: key.stringValue) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { object.set(state.bool(value), for: key.stringValue) }
    mutating func encode(_ value: String, forKey key: Key) throws {
        object.set(state.string(value), for: key.stringValue)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        object.set(state.integer(value), for: key.stringValue)
    }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        object.set(state.integer(value), for: key.stringValue)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws { throw JSONEncodingFallback() }
    mutating func encode(_ value: Float, forKey key: Key) throws { throw JSONEncodingFallback() }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        object.set(try state.node(for: value, path: JSONCodingPath(parent: path, key: key)), for: key.stringValue)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = JSONObjectNode()
        object.set(.object(nested), for: key.stringValue)
        return KeyedEncodingContainer(
            JSONKeyedContainer<NestedKey>(state: state, object: nested, path: JSONCodingPath(parent: path, key: key)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = JSONArrayNode()
        object.set(.array(nested), for: key.stringValue)
        return JSONUnkeyedContainer(state: state, array: nested, path: JSONCodingPath(parent: path, key: key))
    }

    mutating func superEncoder() -> any Encoder { state.fallBack() }

    mutating func superEncoder(forKey key: Key) -> any Encoder { state.fallBack() }
}

private struct JSONUnkeyedContainer: UnkeyedEncodingContainer {
    let state: JSONEncodingState
    let array: JSONArrayNode
    let path: JSONCodingPath?

    var codingPath: [any CodingKey] { JSONCodingPath.keys(of: path) }
    var count: Int { array.values.count }

    mutating func encodeNil() throws { array.values.append(state.null()) }
    mutating func encode(_ value: Bool) throws { array.values.append(state.bool(value)) }
    mutating func encode(_ value: String) throws { array.values.append(state.string(value)) }
    mutating func encode(_ value: Int) throws { array.values.append(state.integer(value)) }
    mutating func encode(_ value: Int64) throws { array.values.append(state.integer(value)) }
    mutating func encode(_ value: Double) throws { throw JSONEncodingFallback() }
    mutating func encode(_ value: Float) throws { throw JSONEncodingFallback() }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let key = JSONIndexKey(intValue: array.values.count)
        array.values.append(try state.node(for: value, path: JSONCodingPath(parent: path, key: key)))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let key = JSONIndexKey(intValue: array.values.count)
        let nested = JSONObjectNode()
        array.values.append(.object(nested))
        return KeyedEncodingContainer(
            JSONKeyedContainer<NestedKey>(state: state, object: nested, path: JSONCodingPath(parent: path, key: key)))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = JSONIndexKey(intValue: array.values.count)
        let nested = JSONArrayNode()
        array.values.append(.array(nested))
        return JSONUnkeyedContainer(state: state, array: nested, path: JSONCodingPath(parent: path, key: key))
    }

    mutating func superEncoder() -> any Encoder { state.fallBack() }
}

private struct JSONSingleValueContainer: SingleValueEncodingContainer {
    let encoder: JSONValueEncoder

    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ node: JSONNode) {
        precondition(encoder.node == nil, "a single value is encoded once")
        encoder.node = node
    }

    mutating func encodeNil() throws { set(encoder.state.null()) }
    mutating func encode(_ value: Bool) throws { set(encoder.state.bool(value)) }
    mutating func encode(_ value: String) throws { set(encoder.state.string(value)) }
    mutating func encode(_ value: Int) throws { set(encoder.state.integer(value)) }
    mutating func encode(_ value: Int64) throws { set(encoder.state.integer(value)) }
    mutating func encode(_ value: Double) throws { throw JSONEncodingFallback() }
    mutating func encode(_ value: Float) throws { throw JSONEncodingFallback() }

    mutating func encode<T: Encodable>(_ value: T) throws {
        set(try encoder.state.node(for: value, path: encoder.path))
    }
}

/// An encoder for what this one leaves to Foundation's: anything encoded through it stops the encoding, which
/// Foundation's encoder then does whole.
private struct JSONFallbackEncoder: Encoder {
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(JSONFallbackKeyed<Key>())
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { JSONFallbackUnkeyed() }
    func singleValueContainer() -> any SingleValueEncodingContainer { JSONFallbackSingle() }
}

private struct JSONFallbackKeyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    var codingPath: [any CodingKey] { [] }
    mutating func encodeNil(forKey key: Key) throws { throw JSONEncodingFallback() }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { throw JSONEncodingFallback() }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    { KeyedEncodingContainer(JSONFallbackKeyed<NestedKey>()) }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { JSONFallbackUnkeyed() }
    mutating func superEncoder() -> any Encoder { JSONFallbackEncoder() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { JSONFallbackEncoder() }
}

private struct JSONFallbackUnkeyed: UnkeyedEncodingContainer {
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }
    mutating func encodeNil() throws { throw JSONEncodingFallback() }
    mutating func encode<T: Encodable>(_ value: T) throws { throw JSONEncodingFallback() }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    { KeyedEncodingContainer(JSONFallbackKeyed<NestedKey>()) }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { JSONFallbackUnkeyed() }
    mutating func superEncoder() -> any Encoder { JSONFallbackEncoder() }
}

private struct JSONFallbackSingle: SingleValueEncodingContainer {
    var codingPath: [any CodingKey] { [] }
    mutating func encodeNil() throws { throw JSONEncodingFallback() }
    mutating func encode<T: Encodable>(_ value: T) throws { throw JSONEncodingFallback() }
}
