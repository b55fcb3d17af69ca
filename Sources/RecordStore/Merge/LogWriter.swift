import Foundation

/// Appends the log format's primitives to a byte buffer: little-endian integers, LEB128 lengths, UTF-8 text.
package struct LogWriter: Sendable {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    package mutating func writeByte(_ byte: UInt8) { bytes.append(byte) }

    package mutating func writeBytes(_ other: some Sequence<UInt8>) { bytes.append(contentsOf: other) }

    package mutating func writeFixed(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    package mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    package mutating func writeVarint(_ value: Int) { writeVarint(UInt64(value)) }

    package mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            writeVarint(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    package mutating func writeUUID(_ uuid: UUID) {
        withUnsafeBytes(of: uuid.uuid) { bytes.append(contentsOf: $0) }
    }

    /// The 16 bytes of `id`'s UUID, as ``writeUUID(_:)`` writes them.
    package mutating func writeUUID(of id: ManagedObjectID) {
        withUnsafeBytes(of: (id.words.0.bigEndian, id.words.1.bigEndian)) { bytes.append(contentsOf: $0) }
    }

    /// A value as a uniqueness key part: the value's tag and its canonical bytes, with the entity of an object.
    package mutating func writeKeyValue(_ value: RecordValue) {
        writeValue(value) { writer, id in
            writer.writeString(id.entityName)
            writer.writeUUID(id.uuid)
        }
    }

    /// A value: a tag byte, then its bytes. Objects are written by `writeObject`.
    package mutating func writeValue(_ value: RecordValue, writeObject: (inout LogWriter, ManagedObjectID) -> Void) {
        switch value {
        case .null: writeByte(ValueTag.null.rawValue)
        case .string(let string):
            writeByte(ValueTag.string.rawValue)
            writeString(string)
        case .integer(let number):
            writeByte(ValueTag.integer.rawValue)
            writeFixed(UInt64(bitPattern: number))
        case .double(let number):
            writeByte(ValueTag.double.rawValue)
            writeFixed(number.bitPattern)
        case .decimal(let number):
            writeByte(ValueTag.decimal.rawValue)
            writeString(number.canonicalText)
        case .boolean(let flag):
            writeByte(ValueTag.boolean.rawValue)
            writeByte(flag ? 1 : 0)
        case .date(let date):
            writeByte(ValueTag.date.rawValue)
            writeFixed(date.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let uuid):
            writeByte(ValueTag.uuid.rawValue)
            writeUUID(uuid)
        case .url(let url):
            writeByte(ValueTag.url.rawValue)
            writeString(url.absoluteString)
        case .data(let data):
            writeByte(ValueTag.data.rawValue)
            writeVarint(data.count)
            bytes.append(contentsOf: data)
        case .object(let id):
            writeByte(ValueTag.object.rawValue)
            writeObject(&self, id)
        }
    }
}

/// The tag byte before each value in a log.
package enum ValueTag: UInt8, Sendable {
    case null = 0, string, integer, double, decimal, boolean, date, uuid, url, data, object
}
