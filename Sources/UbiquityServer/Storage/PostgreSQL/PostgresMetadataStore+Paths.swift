import PostgresNIO
import UbiquityProtocol

/// Where live items may be, as in ``SQLiteMetadataStore``: no two live items, and no item and implicit folder,
/// whose paths (or whose ancestors' paths) share a ``ItemPath/collisionKey`` but are spelled differently. The
/// `folder` table counts, for every folder above a live item, how many live items are beneath it. The caller holds
/// the container's lock.
extension PostgresMetadataStore {
    /// Takes `path` for the live item `id` of `kind`, or refuses with ``ProtocolError/Code/pathCollision``.
    static func claim(
        _ path: ItemPath, kind: ItemKind, for id: ItemID, in key: ContainerKey, db: PostgresTransaction
    ) async throws {
        func refuse(_ why: String) -> ProtocolError {
            ProtocolError(.pathCollision, "\(path) cannot be used: \(why)")
        }
        if let other = try await liveItem(key: path.collisionKey, in: key, db: db), other.id != id.string {
            throw refuse(
                other.path == path.string
                    ? "another item is there" : "it differs only in case or normalisation from \(other.path)")
        }
        if let folder = try await folderPath(key: path.collisionKey, in: key, db: db) {
            guard kind == .directory else { throw refuse("\(folder) is a folder holding other items") }
            guard folder == path.string else {
                throw refuse("it differs only in case or normalisation from the folder \(folder)")
            }
        }
        for ancestor in path.ancestors {
            if let item = try await liveItem(key: ancestor.collisionKey, in: key, db: db),
                item.kind != ItemKind.directory.rawValue || item.path != ancestor.string
            {
                throw refuse(
                    item.path == ancestor.string
                        ? "\(item.path) is not a folder"
                        : "\(ancestor) differs only in case or normalisation from \(item.path)")
            }
            if let folder = try await folderPath(key: ancestor.collisionKey, in: key, db: db),
                folder != ancestor.string
            {
                throw refuse("\(ancestor) differs only in case or normalisation from the folder \(folder)")
            }
        }
        let ancestors = path.ancestors
        guard !ancestors.isEmpty else { return }
        try await db.run(
            """
            INSERT INTO folder (account_id, container_id, path_key, path, item_count)
            SELECT \(key.account.string), \(key.container.string), path_key, path, 1
            FROM unnest(\(ancestors.map(\.collisionKey)), \(ancestors.map(\.string))) AS entry(path_key, path)
            ON CONFLICT (account_id, container_id, path_key) DO UPDATE SET item_count = folder.item_count + 1
            """)
    }

    /// Gives up `path`, held by a live item that is being deleted or moved.
    static func release(_ path: ItemPath, in key: ContainerKey, db: PostgresTransaction) async throws {
        let keys = path.ancestors.map(\.collisionKey)
        guard !keys.isEmpty else { return }
        let (account, container) = (key.account.string, key.container.string)
        try await db.run(
            """
            UPDATE folder SET item_count = item_count - 1
            WHERE account_id = \(account) AND container_id = \(container) AND path_key = ANY(\(keys))
            """)
        try await db.run(
            """
            DELETE FROM folder
            WHERE account_id = \(account) AND container_id = \(container) AND path_key = ANY(\(keys))
                AND item_count <= 0
            """)
    }

    private static func liveItem(key pathKey: String, in key: ContainerKey, db: PostgresTransaction) async throws
        -> (id: String, path: String, kind: String)?
    {
        try await db.row(
            """
            SELECT item_id, path, kind FROM item
            WHERE account_id = \(key.account.string) AND container_id = \(key.container.string)
                AND path_key = \(pathKey) AND NOT is_deleted
            """, as: (String, String, String).self
        ).map { (id: $0.0, path: $0.1, kind: $0.2) }
    }

    private static func folderPath(key pathKey: String, in key: ContainerKey, db: PostgresTransaction) async throws
        -> String?
    {
        try await db.value(
            """
            SELECT path FROM folder
            WHERE account_id = \(key.account.string) AND container_id = \(key.container.string)
                AND path_key = \(pathKey)
            """, as: String.self)
    }
}
