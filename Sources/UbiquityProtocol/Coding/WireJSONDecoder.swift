import Foundation

/// Decodes JSON as Foundation's `JSONDecoder` does, reading the records decoded for every commit (requests, answers,
/// stored versions) straight from the bytes into their values, and everything else — and any text those readers do
/// not take as it stands (an escape they do not expect, a number with a fraction, a missing or repeated key, a value
/// their initializers refuse) — with Foundation's decoder, so that what is refused is refused with its errors.
package struct WireJSONDecoder: Sendable {
    package init() {}

    /// The value of `type` in `data`.
    /// - Throws: What Foundation's `JSONDecoder` throws for the same text.
    package func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        if let readable = type as? any WireJSONReadable.Type,
            let value = Self.read(readable, from: data) as? T
        {
            return value
        }
        return try JSONDecoder().decode(type, from: data)
    }

    /// The value of `type` in `text`.
    package func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        var text = text
        if let readable = type as? any WireJSONReadable.Type {
            let value = text.withUTF8 { bytes in Self.read(readable, in: UnsafeRawBufferPointer(bytes)) }
            if let value = value as? T { return value }
        }
        return try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    static func read(_ type: any WireJSONReadable.Type, from data: Data) -> (any WireJSONReadable)? {
        data.withUnsafeBytes { bytes in read(type, in: bytes) }
    }

    /// The whole of `bytes` read as `type`; `nil` for anything the reader leaves to Foundation's decoder.
    private static func read(_ type: any WireJSONReadable.Type, in bytes: UnsafeRawBufferPointer)
        -> (any WireJSONReadable)?
    {
        var reader = WireJSONReader(bytes)
        do {
            let value = try type.init(wireJSON: &reader)
            try reader.end()
            return value
        } catch {
            return nil
        }
    }
}

/// A type read straight from JSON text: what its `Decodable` conformance decodes, or an error for anything else
/// (Foundation's decoder then decodes the text and gives its own answer).
package protocol WireJSONReadable: Decodable {
    init(wireJSON reader: inout WireJSONReader) throws
}

/// Thrown by the reader for text it leaves to Foundation's decoder.
package struct WireJSONUnread: Error {}

/// Reads JSON values one after another from bytes.
package struct WireJSONReader {
    private let bytes: UnsafeRawBufferPointer
    private var position = 0
    /// How many objects and arrays are open: text nested deeper than ``maximumDepth`` is left to Foundation's
    /// decoder (which refuses it), so that hostile nesting cannot exhaust the stack here.
    private var depth = 0
    static let maximumDepth = 64
    /// The most keys an object read here may have.
    static let maximumKeys = 32

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func next() throws -> UInt8 {
        skipWhitespace()
        guard position < bytes.count else { throw WireJSONUnread() }
        return bytes[position]
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard try next() == byte else { throw WireJSONUnread() }
        position += 1
    }

    /// Checks that nothing but whitespace follows.
    mutating func end() throws {
        skipWhitespace()
        guard position == bytes.count else { throw WireJSONUnread() }
    }

    // MARK: Values

    /// Whether the next value is `null`, which is then read.
    package mutating func readNull() throws -> Bool {
        guard try next() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    package mutating func readBool() throws -> Bool {
        switch try next() {
        case UInt8(ascii: "t"):
            try literal("true")
            return true
        case UInt8(ascii: "f"):
            try literal("false")
            return false
        default:
            throw WireJSONUnread()
        }
    }

    private mutating func literal(_ text: StaticString) throws {
        let count = text.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw WireJSONUnread() }
        for index in 0..<count where bytes[position + index] != text.utf8Start[index] { throw WireJSONUnread() }
        position += count
    }

    /// An integer written with digits alone (and a sign); anything else (a fraction, an exponent, too many digits)
    /// is left to Foundation's decoder.
    package mutating func readInt64() throws -> Int64 {
        var negative = false
        if try next() == UInt8(ascii: "-") {
            negative = true
            position += 1
        }
        let start = position
        var magnitude: UInt64 = 0
        while position < bytes.count, case let digit = bytes[position], digit >= 0x30, digit <= 0x39 {
            let (times, overflowTimes) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(UInt64(digit - 0x30))
            guard !overflowTimes, !overflowSum else { throw WireJSONUnread() }
            magnitude = sum
            position += 1
        }
        let count = position - start
        // No digits, a leading zero before more digits, or a fraction or exponent after them.
        guard count > 0, !(count > 1 && bytes[start] == 0x30) else { throw WireJSONUnread() }
        if position < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[position]) {
            throw WireJSONUnread()
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { throw WireJSONUnread() }
            return magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { throw WireJSONUnread() }
        return Int64(magnitude)
    }

    /// A string without escapes, or with the escapes JSON defines; text that is not UTF-8, or a control character
    /// left unescaped, is left to Foundation's decoder.
    package mutating func readString() throws -> String {
        try expect(UInt8(ascii: "\""))
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let run = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
                position += 1
                guard let text = String(validating: run, as: UTF8.self) else { throw WireJSONUnread() }
                return text
            }
            if byte == UInt8(ascii: "\\") { return try readEscapedString(from: start) }
            guard byte >= 0x20 else { throw WireJSONUnread() }
            position += 1
        }
        throw WireJSONUnread()
    }

    private mutating func readEscapedString(from start: Int) throws -> String {
        var decoded = Array(bytes[start..<position])
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: decoded, as: UTF8.self) else { throw WireJSONUnread() }
                return text
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { throw WireJSONUnread() }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hexQuad()
                    if (0xD800..<0xDC00).contains(scalar) {
                        // A high surrogate must be followed by its low one.
                        guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                            bytes[position + 1] == UInt8(ascii: "u")
                        else { throw WireJSONUnread() }
                        position += 2
                        let low = try hexQuad()
                        guard (0xDC00..<0xE000).contains(low) else { throw WireJSONUnread() }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw WireJSONUnread() }
                    decoded.append(contentsOf: String(Character(unicode)).utf8)
                default:
                    throw WireJSONUnread()
                }
            default:
                guard byte >= 0x20 else { throw WireJSONUnread() }
                decoded.append(byte)
            }
        }
        throw WireJSONUnread()
    }

    private mutating func hexQuad() throws -> UInt32 {
        guard position + 4 <= bytes.count else { throw WireJSONUnread() }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x61...0x66: digit = byte - 0x61 + 10
            case 0x41...0x46: digit = byte - 0x41 + 10
            default: throw WireJSONUnread()
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    /// Reads an object, handing each key to `member`, which reads the key's value (or skips it with
    /// ``skipValue()``). A key repeated is left to Foundation's decoder.
    package mutating func readObject(_ member: (inout WireJSONReader, String) throws -> Void) throws {
        try expect(UInt8(ascii: "{"))
        depth += 1
        guard depth <= Self.maximumDepth else { throw WireJSONUnread() }
        defer { depth -= 1 }
        if try next() == UInt8(ascii: "}") {
            position += 1
            return
        }
        var seen: [String] = []
        while true {
            let key = try readString()
            // The records read here have a few keys each: an object of many is left to Foundation's decoder, rather
            // than checked for repeats one key against all the others.
            guard seen.count < Self.maximumKeys, !seen.contains(key) else { throw WireJSONUnread() }
            seen.append(key)
            try expect(UInt8(ascii: ":"))
            try member(&self, key)
            switch try next() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                return
            default: throw WireJSONUnread()
            }
        }
    }

    /// Reads an array, calling `element` for each of its values.
    package mutating func readArray(_ element: (inout WireJSONReader) throws -> Void) throws {
        try expect(UInt8(ascii: "["))
        depth += 1
        guard depth <= Self.maximumDepth else { throw WireJSONUnread() }
        defer { depth -= 1 }
        if try next() == UInt8(ascii: "]") {
            position += 1
            return
        }
        while true {
            try element(&self)
            switch try next() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"):
                position += 1
                return
            default: throw WireJSONUnread()
            }
        }
    }

    /// Reads and ignores one value of any kind, as decoding ignores keys it does not know.
    package mutating func skipValue() throws {
        switch try next() {
        case UInt8(ascii: "\""): _ = try readString()
        case UInt8(ascii: "{"): try readObject { reader, _ in try reader.skipValue() }
        case UInt8(ascii: "["): try readArray { reader in try reader.skipValue() }
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try readBool()
        case UInt8(ascii: "n"): _ = try readNull()
        default: _ = try readInt64()
        }
    }

    /// Reads a value through its `Decodable` conformance's reader.
    package mutating func read<T: WireJSONReadable>(_ type: T.Type) throws -> T {
        try T(wireJSON: &self)
    }
}

/// A value read for a key, which must be read once.
package struct WireJSONField<Value> {
    private(set) var value: Value?

    package init() {}

    package var isSet: Bool { value != nil }

    /// The value read; a missing key is left to Foundation's decoder.
    package func required() throws -> Value {
        guard let value else { throw WireJSONUnread() }
        return value
    }

    package mutating func set(_ newValue: Value) { value = newValue }
}
