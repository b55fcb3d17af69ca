import Foundation
import UbiquityProtocol

/// Appends the fields of the state database's binary forms (``LocalItem/stateBytes``,
/// ``ItemObservation/stateBytes``): integers little-endian, lengths as unsigned LEB128, strings as a length and UTF-8.
struct StateWriter {
    var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(160) }

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func word(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func uuid(_ value: UUID) {
        withUnsafeBytes(of: value.uuid) { bytes.append(contentsOf: $0) }
    }

    mutating func bytes(_ value: [UInt8]) { bytes.append(contentsOf: value) }

    mutating func length(_ value: Int) {
        var rest = UInt64(value)
        repeat {
            let low = UInt8(rest & 0x7F)
            rest >>= 7
            bytes.append(rest == 0 ? low : low | 0x80)
        } while rest != 0
    }

    mutating func string(_ value: String) {
        length(value.utf8.count)
        bytes.append(contentsOf: value.utf8)
    }

    mutating func hash(_ value: ChunkHash) { bytes.append(contentsOf: value.digest) }

    /// A file identity: its eight integers.
    mutating func identity(_ identity: LocalFileIdentity) {
        for value in [
            identity.device, identity.inode, UInt64(bitPattern: identity.size), UInt64(bitPattern: identity.modified),
            UInt64(bitPattern: identity.changed), UInt64(bitPattern: identity.capturedAt), UInt64(identity.mode),
            identity.members,
        ] {
            word(value)
        }
    }
}

/// Reads the fields ``StateWriter`` wrote, refusing to read past the end.
struct StateReader {
    private let bytes: [UInt8]
    private var at = 0
    /// What the bytes are, for errors.
    private let what: String

    init(_ bytes: [UInt8], of what: String) {
        self.bytes = bytes
        self.what = what
    }

    var isAtEnd: Bool { at == bytes.count }

    func malformed(_ what: String) -> ProtocolError {
        ProtocolError(.malformedRequest, "\(self.what) in the state database has \(what) (at byte \(at))")
    }

    mutating func bytes(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - at else { throw malformed("a field cut short") }
        defer { at += count }
        return bytes[at..<at + count]
    }

    mutating func byte() throws -> UInt8 { try bytes(1).first! }

    mutating func word() throws -> UInt64 {
        var value: UInt64 = 0
        for (shift, byte) in try bytes(8).enumerated() { value |= UInt64(byte) << (8 * shift) }
        return value
    }

    mutating func uuid() throws -> UUID {
        let raw = try bytes(16)
        return raw.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }

    mutating func length() throws -> Int {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try self.byte()
            guard shift < 63 else { throw malformed("a length out of range") }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        guard value <= UInt64(bytes.count) else { throw malformed("a length past its end") }
        return Int(value)
    }

    mutating func string() throws -> String {
        let count = try length()
        return String(decoding: try bytes(count), as: UTF8.self)
    }

    mutating func hash() throws -> ChunkHash { try ChunkHash(digest: try bytes(32)) }

    mutating func path() throws -> ItemPath { try ItemPath(try string()) }

    mutating func kind() throws -> ItemKind {
        guard let kind = ItemKind(rawValue: try string()) else { throw malformed("an unknown kind") }
        return kind
    }

    mutating func identity() throws -> LocalFileIdentity {
        var found = LocalFileIdentity(
            device: try word(), inode: try word(), size: Int64(bitPattern: try word()),
            modified: Int64(bitPattern: try word()), changed: Int64(bitPattern: try word()))
        found.capturedAt = Int64(bitPattern: try word())
        guard let mode = UInt32(exactly: try word()) else { throw malformed("a mode out of range") }
        found.mode = mode
        found.members = try word()
        return found
    }
}
