import PostgresNIO
import UbiquityProtocol

/// Where live items may be, as in ``SQLiteMetadataStore``: no two live items, and no item and implicit folder,
/// whose paths (or whose ancestors' paths) share a ``ItemPath/collisionKey`` but are spelled differently. The
/// `folder` table counts, for every folder above a live item, how many live items are beneath it. The caller holds
/// the container's lock.
extension PostgresMetadataStore {
    /// Takes `path` for the live item `id` of `kind`, or refuses with ``ProtocolError/Code/pathCollision``.
    static func claim(_ path: ItemPath, kind: ItemKind, for id: ItemID, in work: PostgresItemWork) async throws {
        func refuse(_ why: String) -> ProtocolError {
            ProtocolError(.pathCollision, "\(path) cannot be used: \(why)")
        }
        try await work.hold([path] + path.ancestors)
        if let other = try await work.liveItem(at: path.collisionKey), other.id != id.string {
            throw refuse(
                other.path == path.string
                    ? "another item is there" : "it differs only in case or normalisation from \(other.path)")
        }
        if let folder = try await work.folder(at: path.collisionKey)?.path {
            guard kind == .directory else { throw refuse("\(folder) is a folder holding other items") }
            guard folder == path.string else {
                throw refuse("it differs only in case or normalisation from the folder \(folder)")
            }
        }
        for ancestor in path.ancestors {
            if let item = try await work.liveItem(at: ancestor.collisionKey),
                item.kind != ItemKind.directory.rawValue || item.path != ancestor.string
            {
                throw refuse(
                    item.path == ancestor.string
                        ? "\(item.path) is not a folder"
                        : "\(ancestor) differs only in case or normalisation from \(item.path)")
            }
            if let folder = try await work.folder(at: ancestor.collisionKey)?.path, folder != ancestor.string {
                throw refuse("\(ancestor) differs only in case or normalisation from the folder \(folder)")
            }
        }
        try await work.addToFolders(path.ancestors)
    }

    /// Gives up `path`, held by a live item that is being deleted or moved.
    static func release(_ path: ItemPath, in work: PostgresItemWork) async throws {
        try await work.removeFromFolders(path.ancestors)
    }
}
