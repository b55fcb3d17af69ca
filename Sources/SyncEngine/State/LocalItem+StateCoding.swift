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
        if let identity { writer.identity(identity) }
        if let baseVersion { writer.uuid(baseVersion.uuid) }
        if let serverVersion { writer.uuid(serverVersion.uuid) }
        if let contentHash { writer.hash(contentHash) }
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
        var reader = StateReader(Array(bytes), of: "an item record")
        guard try reader.byte() == Self.stateFormat else { throw reader.malformed("an unknown format") }
        let id = ItemID(uuid: try reader.uuid())
        let path = try reader.path()
        let kind = try reader.kind()
        let flags = try reader.byte()
        let identity = flags & Flag.identity != 0 ? try reader.identity() : nil
        let baseVersion = flags & Flag.baseVersion != 0 ? VersionID(uuid: try reader.uuid()) : nil
        let serverVersion = flags & Flag.serverVersion != 0 ? VersionID(uuid: try reader.uuid()) : nil
        let contentHash = flags & Flag.contentHash != 0 ? try reader.hash() : nil
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
