import Foundation
import UbiquityProtocol

/// The form the state database keeps an item in as apps see it (`item_record.record`): a few dozen bytes read field by
/// field, where its JSON took about twenty microseconds to decode — seconds for an app opening a container of
/// 100,000 items, which reads every one.
///
/// Layout (integers little-endian, lengths as unsigned LEB128): a format byte (1); the id's 16 bytes; the path; the
/// kind's raw value; a byte of flags (which optional fields follow, placeholder, unresolved conflicts); then, as the
/// flags say, the identity (eight integers), the base and server versions (16 bytes each), the content hash (32
/// bytes); the size; then each error present as its code's raw value and its message. Strings are a length and
/// UTF-8.
extension LocalItem {
    static let stateFormat: UInt8 = 1

    private enum Flag {
        static let identity: UInt8 = 1 << 0
        static let baseVersion: UInt8 = 1 << 1
        static let serverVersion: UInt8 = 1 << 2
        static let contentHash: UInt8 = 1 << 3
        static let placeholder: UInt8 = 1 << 4
        static let conflicts: UInt8 = 1 << 5
        static let uploadError: UInt8 = 1 << 6
        static let downloadError: UInt8 = 1 << 7
    }

    /// The item in the state database's form.
    var stateBytes: Data {
        var writer = StateWriter()
        writer.byte(Self.stateFormat)
        writer.uuid(id.uuid)
        writer.string(path.string)
        writer.string(kind.rawValue)
        var flags: UInt8 = 0
        if identity != nil { flags |= Flag.identity }
        if baseVersion != nil { flags |= Flag.baseVersion }
        if serverVersion != nil { flags |= Flag.serverVersion }
        if contentHash != nil { flags |= Flag.contentHash }
        if isPlaceholder { flags |= Flag.placeholder }
        if hasUnresolvedConflicts { flags |= Flag.conflicts }
        if uploadError != nil { flags |= Flag.uploadError }
        if downloadError != nil { flags |= Flag.downloadError }
        writer.byte(flags)
        if let identity {
            for value in [
                identity.device, identity.inode, UInt64(bitPattern: identity.size),
                UInt64(bitPattern: identity.modified), UInt64(bitPattern: identity.changed),
                UInt64(bitPattern: identity.capturedAt), UInt64(identity.mode), identity.members,
            ] {
                writer.word(value)
            }
        }
        if let baseVersion { writer.uuid(baseVersion.uuid) }
        if let serverVersion { writer.uuid(serverVersion.uuid) }
        if let contentHash { writer.bytes(contentHash.digest) }
        writer.word(UInt64(bitPattern: size))
        for error in [uploadError, downloadError].compactMap({ $0 }) {
            writer.string(error.code.rawValue)
            writer.string(error.message)
        }
        return Data(writer.bytes)
    }

    /// Reads an item in the state database's form.
    /// - Throws: ``ProtocolError/Code/malformedRequest`` for bytes that are not one (cut short, an unknown format,
    ///   a field out of range), naming what was wrong.
    init(stateBytes bytes: some Collection<UInt8>) throws {
        var reader = StateReader(Array(bytes))
        guard try reader.byte() == Self.stateFormat else { throw reader.malformed("an unknown format") }
        let id = ItemID(uuid: try reader.uuid())
        let path = try ItemPath(try reader.string())
        guard let kind = ItemKind(rawValue: try reader.string()) else { throw reader.malformed("an unknown kind") }
        let flags = try reader.byte()
        var identity: LocalFileIdentity?
        if flags & Flag.identity != 0 {
            var found = LocalFileIdentity(
                device: try reader.word(), inode: try reader.word(), size: Int64(bitPattern: try reader.word()),
                modified: Int64(bitPattern: try reader.word()), changed: Int64(bitPattern: try reader.word()))
            found.capturedAt = Int64(bitPattern: try reader.word())
            guard let mode = UInt32(exactly: try reader.word()) else { throw reader.malformed("a mode out of range") }
            found.mode = mode
            found.members = try reader.word()
            identity = found
        }
        let baseVersion = flags & Flag.baseVersion != 0 ? VersionID(uuid: try reader.uuid()) : nil
        let serverVersion = flags & Flag.serverVersion != 0 ? VersionID(uuid: try reader.uuid()) : nil
        let contentHash = flags & Flag.contentHash != 0 ? try ChunkHash(digest: try reader.bytes(32)) : nil
        let size = Int64(bitPattern: try reader.word())
        func error() throws -> ItemError {
            let code = ProtocolError.Code(rawValue: try reader.string())
            return ItemError(code: code, message: try reader.string())
        }
        let uploadError = flags & Flag.uploadError != 0 ? try error() : nil
        let downloadError = flags & Flag.downloadError != 0 ? try error() : nil
        guard reader.isAtEnd else { throw reader.malformed("bytes after its end") }
        self.init(
            id: id, path: path, kind: kind, identity: identity, baseVersion: baseVersion,
            serverVersion: serverVersion, contentHash: contentHash, size: size,
            isPlaceholder: flags & Flag.placeholder != 0, hasUnresolvedConflicts: flags & Flag.conflicts != 0)
        self.uploadError = uploadError
        self.downloadError = downloadError
    }
}

/// Appends the fields of ``LocalItem/stateBytes``.
private struct StateWriter {
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
}

/// Reads the fields of ``LocalItem/stateBytes``, refusing to read past the end.
private struct StateReader {
    private let bytes: [UInt8]
    private var at = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { at == bytes.count }

    func malformed(_ what: String) -> ProtocolError {
        ProtocolError(.malformedRequest, "an item record in the state database has \(what) (at byte \(at))")
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
}
