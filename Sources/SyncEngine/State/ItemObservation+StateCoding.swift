import Foundation
import UbiquityProtocol

/// The form the state database keeps an item's observations in (`item_record.observation`), read and written with
/// every record the engine touches: field by field, as ``LocalItem/stateBytes``, where JSON cost a tenth of the
/// engine's time when many small files arrive at once.
///
/// Layout (``StateWriter``'s integers, lengths and strings): a format byte (1); the id's 16 bytes; the requests' byte;
/// a byte saying which views follow; then each view present in the order remote, local, synced — its path and kind's
/// raw value, a byte saying which of its optional fields follow, then those fields and its others:
/// - remote: the version (16 bytes), the content hash (32), the size;
/// - local: the identity (eight integers), the content hash;
/// - synced: the version, the content hash, the size, the identity.
extension ItemObservation {
    static let stateFormat: UInt8 = 1

    private enum Has {
        static let remote: UInt8 = 1 << 0
        static let local: UInt8 = 1 << 1
        static let synced: UInt8 = 1 << 2
        static let version: UInt8 = 1 << 0
        static let contentHash: UInt8 = 1 << 1
        static let deleted: UInt8 = 1 << 2
        static let identity: UInt8 = 1 << 3
    }

    /// The observations in the state database's form.
    var stateBytes: Data {
        var writer = StateWriter()
        writer.byte(Self.stateFormat)
        writer.uuid(id.uuid)
        writer.byte(requests.rawValue)
        writer.byte(
            (remote != nil ? Has.remote : 0) | (local != nil ? Has.local : 0) | (synced != nil ? Has.synced : 0))
        if let remote {
            writer.string(remote.path.string)
            writer.string(remote.kind.rawValue)
            writer.byte(
                (remote.version != nil ? Has.version : 0) | (remote.contentHash != nil ? Has.contentHash : 0)
                    | (remote.isDeleted ? Has.deleted : 0))
            if let version = remote.version { writer.uuid(version.uuid) }
            if let hash = remote.contentHash { writer.hash(hash) }
            writer.word(UInt64(bitPattern: remote.size))
        }
        if let local {
            writer.string(local.path.string)
            writer.string(local.kind.rawValue)
            writer.byte(local.contentHash != nil ? Has.contentHash : 0)
            writer.identity(local.identity)
            if let hash = local.contentHash { writer.hash(hash) }
        }
        if let synced {
            writer.string(synced.path.string)
            writer.string(synced.kind.rawValue)
            writer.byte(
                (synced.version != nil ? Has.version : 0) | (synced.contentHash != nil ? Has.contentHash : 0)
                    | (synced.identity != nil ? Has.identity : 0))
            if let version = synced.version { writer.uuid(version.uuid) }
            if let hash = synced.contentHash { writer.hash(hash) }
            writer.word(UInt64(bitPattern: synced.size))
            if let identity = synced.identity { writer.identity(identity) }
        }
        return Data(writer.bytes)
    }

    /// Reads observations in the state database's form.
    /// - Throws: ``ProtocolError/Code/malformedRequest`` for bytes that are not such a form (cut short, an unknown
    ///   format or kind, bytes after the end), or the path's own error for a path that breaks the rules.
    init(stateBytes bytes: some Collection<UInt8>) throws {
        var reader = StateReader(Array(bytes), of: "an item's observations")
        guard try reader.byte() == Self.stateFormat else { throw reader.malformed("an unknown format") }
        let id = ItemID(uuid: try reader.uuid())
        let requests = ItemRequests(rawValue: try reader.byte())
        let views = try reader.byte()
        var remote: RemoteView?
        if views & Has.remote != 0 {
            let (path, kind, has) = (try reader.path(), try reader.kind(), try reader.byte())
            let version = has & Has.version != 0 ? VersionID(uuid: try reader.uuid()) : nil
            let hash = has & Has.contentHash != 0 ? try reader.hash() : nil
            remote = RemoteView(
                path: path, kind: kind, version: version, contentHash: hash, size: Int64(bitPattern: try reader.word()),
                isDeleted: has & Has.deleted != 0)
        }
        var local: LocalView?
        if views & Has.local != 0 {
            let (path, kind, has) = (try reader.path(), try reader.kind(), try reader.byte())
            let identity = try reader.identity()
            local = LocalView(
                path: path, kind: kind, identity: identity,
                contentHash: has & Has.contentHash != 0 ? try reader.hash() : nil)
        }
        var synced: SyncedView?
        if views & Has.synced != 0 {
            let (path, kind, has) = (try reader.path(), try reader.kind(), try reader.byte())
            let version = has & Has.version != 0 ? VersionID(uuid: try reader.uuid()) : nil
            let hash = has & Has.contentHash != 0 ? try reader.hash() : nil
            let size = Int64(bitPattern: try reader.word())
            synced = SyncedView(
                path: path, kind: kind, version: version, contentHash: hash, size: size,
                identity: has & Has.identity != 0 ? try reader.identity() : nil)
        }
        guard reader.isAtEnd else { throw reader.malformed("bytes after its end") }
        self.init(id: id, remote: remote, local: local, synced: synced, requests: requests)
    }
}
