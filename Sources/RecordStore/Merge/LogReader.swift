import Foundation

/// Reads the log format's primitives, refusing any length or count that runs past the end of the bytes.
package struct LogReader {
    private let bytes: [UInt8]
    private let end: Int
    package private(set) var offset: Int

    /// Reads `bytes[0..<end]`.
    package init(_ bytes: [UInt8], end: Int? = nil) {
        self.bytes = bytes
        self.end = end ?? bytes.count
        self.offset = 0
    }

    package var isAtEnd: Bool { offset == end }
    package var remaining: Int { end - offset }

    package static func corrupt(_ what: String) -> RecordStoreError {
        RecordStoreError(.corruptLog, what)
    }

    package mutating func readByte() throws(RecordStoreError) -> UInt8 {
        guard offset < end else { throw Self.corrupt("the log ends early") }
        defer { offset += 1 }
        return bytes[offset]
    }

    package mutating func readBytes(_ count: Int) throws(RecordStoreError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else { throw Self.corrupt("a length runs past the end of the log") }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    package mutating func readFixed() throws(RecordStoreError) -> UInt64 {
        let slice = try readBytes(8)
        var value: UInt64 = 0
        for (shift, byte) in slice.enumerated() { value |= UInt64(byte) << (8 * UInt64(shift)) }
        return value
    }

    package mutating func readVarint() throws(RecordStoreError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try readByte()
            guard shift < 64, shift < 63 || byte <= 1 else { throw Self.corrupt("a number is too long") }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    /// A count of items each at least `minimumSize` bytes long, so a hostile count cannot ask for more.
    package mutating func readCount(minimumSize: Int = 1) throws(RecordStoreError) -> Int {
        let count = try readVarint()
        guard count <= UInt64(remaining / max(minimumSize, 1)) else {
            throw Self.corrupt("a count of \(count) is more than the log holds")
        }
        return Int(count)
    }

    package mutating func readString() throws(RecordStoreError) -> String {
        let length = try readCount()
        let slice = try readBytes(length)
        guard let string = String(validating: slice, as: UTF8.self) else {
            throw Self.corrupt("text that is not UTF-8")
        }
        return string
    }

    package mutating func readUUID() throws(RecordStoreError) -> UUID {
        let b = Array(try readBytes(16))
        return UUID(
            uuid: (
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]
            ))
    }

    /// A value written by ``LogWriter/writeValue(_:writeObject:)``; objects are read by `readObject`.
    package mutating func readValue(
        readObject: (inout LogReader) throws(RecordStoreError) -> ManagedObjectID
    ) throws(RecordStoreError) -> RecordValue {
        guard let tag = ValueTag(rawValue: try readByte()) else { throw Self.corrupt("an unknown kind of value") }
        switch tag {
        case .null: return .null
        case .string: return .string(try readString())
        case .integer: return .integer(Int64(bitPattern: try readFixed()))
        case .double: return .double(Double(bitPattern: try readFixed()))
        case .decimal:
            let text = try readString()
            guard let number = Decimal(canonicalText: text) else {
                throw Self.corrupt("\(String(reflecting: text)) is not a decimal number")
            }
            return .decimal(number)
        case .boolean:
            let byte = try readByte()
            guard byte <= 1 else { throw Self.corrupt("a Boolean that is neither 0 nor 1") }
            return .boolean(byte == 1)
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try readFixed())))
        case .uuid: return .uuid(try readUUID())
        case .url:
            let text = try readString()
            guard let url = URL(string: text) else { throw Self.corrupt("\(String(reflecting: text)) is not a URL") }
            return .url(url)
        case .data: return .data(Data(try readBytes(try readCount())))
        case .object: return .object(try readObject(&self))
        }
    }
}

extension LogReader {
    /// Reads a name table: a count, then each name.
    package mutating func readNames() throws(RecordStoreError) -> [String] {
        let count = try readCount()
        var names: [String] = []
        names.reserveCapacity(count)
        for _ in 0..<count { names.append(try readString()) }
        return names
    }

    /// Reads an index into `names`.
    package mutating func readName(in names: [String]) throws(RecordStoreError) -> String {
        let index = try readVarint()
        guard index < UInt64(names.count) else { throw LogReader.corrupt("a name index past the names") }
        return names[Int(index)]
    }

    /// Reads an object as its entity's index into `names` and its UUID.
    package mutating func readObject(in names: [String]) throws(RecordStoreError) -> ManagedObjectID {
        let entity = try readName(in: names)
        return ManagedObjectID(entityName: entity, uuid: try readUUID())
    }
}
