import Crypto
import Foundation
import SyncEngine
import UbiquityProtocol
import UbiquityServer

/// The service as the simulation runs it: the real version rules (``ItemVersions``) and the real path rules (one
/// live item per path, by ``ItemPath/collisionKey``), in memory.
struct SimulatedService {
    struct Item {
        var path: ItemPath
        var kind: ItemKind
        var versions: ItemVersions
    }

    /// Every item, tombstones included.
    var items: [ItemID: Item] = [:]
    /// The content of every version, by hash.
    var contents: [ChunkHash: String] = [:]

    /// The record of `id` as a device hears it.
    func view(of id: ItemID) -> RemoteView? {
        guard let item = items[id] else { return nil }
        let current = item.versions.current.flatMap { item.versions.versions[$0] }
        return RemoteView(
            path: item.path, kind: item.kind, version: current?.id, contentHash: current?.contentHash,
            size: current?.size ?? 0, isDeleted: item.versions.isDeleted)
    }

    /// A version's record as the item's current one would be heard.
    func view(of id: ItemID, version: VersionID) -> RemoteView? {
        guard let item = items[id], let record = item.versions.versions[version] else { return nil }
        return RemoteView(
            path: item.path, kind: item.kind, version: record.id, contentHash: record.contentHash, size: record.size)
    }

    func liveOwner(of path: ItemPath) -> ItemID? {
        items.first { !$0.value.versions.isDeleted && $0.value.path.collisionKey == path.collisionKey }?.key
    }

    mutating func create(_ id: ItemID, path: ItemPath, kind: ItemKind) throws(ProtocolError) -> RemoteView {
        if items[id] != nil { return view(of: id)! }
        if liveOwner(of: path) != nil { throw ProtocolError(.pathCollision, "\(path) is taken") }
        items[id] = Item(path: path, kind: kind, versions: ItemVersions(itemID: id))
        return view(of: id)!
    }

    mutating func move(_ id: ItemID, to path: ItemPath) throws(ProtocolError) -> RemoteView {
        guard items[id] != nil else { throw ProtocolError(.itemNotFound, "\(id)") }
        if let owner = liveOwner(of: path), owner != id { throw ProtocolError(.pathCollision, "\(path) is taken") }
        items[id]?.path = path
        return view(of: id)!
    }

    mutating func delete(_ id: ItemID, basedOn: VersionID?) throws(ProtocolError) {
        guard items[id] != nil else { throw ProtocolError(.itemNotFound, "\(id)") }
        _ = try items[id]!.versions.delete(basedOn: basedOn)
    }

    /// Commits `content`; returns the version that holds it and the item's record after.
    mutating func commit(
        _ id: ItemID, content: String, modified: Int64, basedOn: VersionID?, device: SavingDevice, versionID: VersionID
    ) throws(ProtocolError) -> (VersionID, RemoteView) {
        guard var item = items[id] else { throw ProtocolError(.itemNotFound, "\(id)") }
        if item.versions.isDeleted, let owner = liveOwner(of: item.path), owner != id {
            throw ProtocolError(.pathCollision, "\(item.path) is taken")
        }
        let hash = Self.hash(content)
        contents[hash] = content
        let size = Int64(content.utf8.count)
        let record = VersionRecord(
            id: versionID, itemID: id, manifest: .file([ChunkReference(hash: hash, size: size)]), contentHash: hash,
            modificationDate: Date(timeIntervalSince1970: Double(modified) / 1e9), savingDevice: device,
            basedOn: basedOn)
        let (outcome, _) = item.versions.commit(record)
        items[id] = item
        let version: VersionID =
            switch outcome {
            case .becameCurrent(let id), .keptAsConflict(let id, _), .identical(let id): id
            }
        return (version, view(of: id)!)
    }

    /// Every content any version of any item holds.
    var allContents: Set<String> {
        var all = Set<String>()
        for item in items.values {
            for version in item.versions.versions.values {
                if let text = contents[version.contentHash] { all.insert(text) }
            }
        }
        return all
    }

    static func hash(_ content: String) -> ChunkHash {
        try! ChunkHash(digest: SHA256.hash(data: Data(content.utf8)))
    }
}
