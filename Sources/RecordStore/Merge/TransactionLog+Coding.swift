import Crypto
import Foundation

/// The file form of a transaction log.
///
/// ```
/// "UBQRLOG1"  device (16 bytes)  sequence (u64)  time (u64)  model version (varint)
/// names: count, then each as length + UTF-8          entity and property names, referred to by index
/// changes: count, then each:
///   entity (name index)  uuid (16)  existence (0 update, 1 insert, 2 delete)
///   values: count, then (property index, tagged value)          objects as (entity index, uuid)
///   links: count, then (relationship index, 1 added | 0 removed, entity index, uuid)
/// SHA-256 of everything before (32 bytes)
/// ```
/// Integers are little-endian, counts and lengths LEB128. Reading checks the digest first, then every count and
/// length against what is left, so a truncated, altered or hostile file is refused whole.
extension TransactionLog {
    package static let magic = Array("UBQRLOG1".utf8)

    /// The log's bytes.
    package func encoded() -> [UInt8] {
        var names = NameTable()
        var body = LogWriter(capacity: 64 + changes.count * 64)
        body.writeVarint(changes.count)
        for change in changes {
            body.writeVarint(names.index(change.id.entityName))
            body.writeUUID(of: change.id)
            body.writeByte(change.existence.map { $0 ? 1 : 2 } ?? 0)
            body.writeVarint(change.values.count)
            for (property, value) in change.values {
                body.writeVarint(names.index(property))
                body.writeValue(value) { writer, id in
                    writer.writeVarint(names.index(id.entityName))
                    writer.writeUUID(of: id)
                }
            }
            // Most changes link nothing: no arrays sorted and joined for them.
            guard !change.linksAdded.isEmpty || !change.linksRemoved.isEmpty else {
                body.writeVarint(0)
                continue
            }
            let links = change.linksAdded.sorted().map { ($0, true) } + change.linksRemoved.sorted().map { ($0, false) }
            body.writeVarint(links.count)
            for (link, added) in links {
                body.writeVarint(names.index(link.relationship))
                body.writeByte(added ? 1 : 0)
                body.writeVarint(names.index(link.target.entityName))
                body.writeUUID(of: link.target)
            }
        }
        var writer = LogWriter(capacity: body.bytes.count + 128)
        writer.writeBytes(Self.magic)
        writer.writeUUID(device)
        writer.writeFixed(sequence)
        writer.writeFixed(time)
        writer.writeVarint(modelVersion)
        writer.writeVarint(names.names.count)
        for name in names.names { writer.writeString(name) }
        writer.writeBytes(body.bytes)
        writer.writeBytes(SHA256.hash(data: writer.bytes))
        return writer.bytes
    }

    /// The header of a log's bytes, read without the changes: enough to file it, or keep it for a newer model.
    package struct Header: Sendable, Hashable {
        package var device: UUID
        package var sequence: UInt64
        package var time: UInt64
        package var modelVersion: Int
    }

    /// Reads the header after checking the digest.
    /// - Throws: ``RecordStoreError/Code/corruptLog``.
    package static func header(of bytes: [UInt8]) throws(RecordStoreError) -> Header {
        var reader = try verifiedReader(bytes)
        return try readHeader(&reader)
    }

    /// The longest a header can be: magic, device, sequence, time and a ten-byte varint.
    package static let headerPrefixSize = 8 + 16 + 8 + 8 + 10

    /// Reads the header from the first ``headerPrefixSize`` bytes of a log (or all of a shorter one) without
    /// checking the digest, to file logs before reading them whole; ``init(decoding:)`` checks everything later.
    /// - Throws: ``RecordStoreError/Code/corruptLog`` for bytes that do not begin as a log does.
    package static func unverifiedHeader(prefix bytes: [UInt8]) throws(RecordStoreError) -> Header {
        guard bytes.starts(with: magic) else { throw LogReader.corrupt("not a transaction log") }
        var reader = LogReader(bytes)
        _ = try reader.readBytes(magic.count)
        return try readHeader(&reader)
    }

    /// Reads a log.
    /// - Throws: ``RecordStoreError/Code/corruptLog`` for bytes that are not a whole, unaltered log.
    package init(decoding bytes: [UInt8]) throws(RecordStoreError) {
        var reader = try Self.verifiedReader(bytes)
        let header = try Self.readHeader(&reader)
        let names = try reader.readNames()
        func name(_ reader: inout LogReader) throws(RecordStoreError) -> String { try reader.readName(in: names) }
        func object(_ reader: inout LogReader) throws(RecordStoreError) -> ManagedObjectID {
            try reader.readObject(in: names)
        }
        let changeCount = try reader.readCount(minimumSize: 20)
        var changes: [ObjectChange] = []
        changes.reserveCapacity(changeCount)
        for _ in 0..<changeCount {
            var change = ObjectChange(id: try object(&reader))
            switch try reader.readByte() {
            case 0: change.existence = nil
            case 1: change.existence = true
            case 2: change.existence = false
            default: throw LogReader.corrupt("an object change that is neither an insert, an update nor a delete")
            }
            let valueCount = try reader.readCount(minimumSize: 2)
            for _ in 0..<valueCount {
                let property = try name(&reader)
                let value = try reader.readValue(readObject: object)
                guard change.values.updateValue(value, forKey: property) == nil else {
                    throw LogReader.corrupt("\(change.id) sets \(property) twice")
                }
            }
            let linkCount = try reader.readCount(minimumSize: 19)
            for _ in 0..<linkCount {
                let relationship = try name(&reader)
                let added = try reader.readByte()
                guard added <= 1 else { throw LogReader.corrupt("a link that is neither added nor removed") }
                let link = ObjectChange.Link(relationship, try object(&reader))
                if added == 1 { change.linksAdded.append(link) } else { change.linksRemoved.append(link) }
            }
            changes.append(change)
        }
        guard reader.isAtEnd else { throw LogReader.corrupt("bytes after the last change") }
        self.init(
            device: header.device, sequence: header.sequence, time: header.time, modelVersion: header.modelVersion,
            changes: changes)
    }

    private static func verifiedReader(_ bytes: [UInt8]) throws(RecordStoreError) -> LogReader {
        let digestSize = SHA256.byteCount
        guard bytes.count >= magic.count + digestSize, bytes.starts(with: magic) else {
            throw LogReader.corrupt("not a transaction log")
        }
        let end = bytes.count - digestSize
        let digest = SHA256.hash(data: bytes[..<end])
        guard digest.elementsEqual(bytes[end...]) else {
            throw LogReader.corrupt("the log's digest does not match its contents")
        }
        var reader = LogReader(bytes, end: end)
        _ = try reader.readBytes(magic.count)
        return reader
    }

    private static func readHeader(_ reader: inout LogReader) throws(RecordStoreError) -> Header {
        let device = try reader.readUUID()
        let sequence = try reader.readFixed()
        let time = try reader.readFixed()
        let version = try reader.readVarint()
        guard version >= 1, version <= UInt64(Int32.max) else {
            throw LogReader.corrupt("a model version of \(version)")
        }
        return Header(device: device, sequence: sequence, time: time, modelVersion: Int(version))
    }
}

/// Names in the order first used, each written once.
private struct NameTable {
    var names: [String] = []
    var indexes: [String: Int] = [:]

    /// Up to this many names are found by comparing them in turn: a log names a few entities and their properties,
    /// and comparing short names costs less than hashing one, which a log of thousands of objects did for each value.
    static let searchedNames = 32

    mutating func index(_ name: String) -> Int {
        if names.count <= Self.searchedNames {
            if let index = names.firstIndex(of: name) { return index }
        } else if let index = indexes[name] {
            return index
        }
        names.append(name)
        if names.count > Self.searchedNames {
            if indexes.isEmpty {
                for (index, name) in names.enumerated() { indexes[name] = index }
            } else {
                indexes[name] = names.count - 1
            }
        }
        return names.count - 1
    }
}
