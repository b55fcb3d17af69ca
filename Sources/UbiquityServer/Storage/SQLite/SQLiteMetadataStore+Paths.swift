import GRDB
import UbiquityProtocol

/// Where live items may be: no two live items, and no item and implicit folder, whose paths (or whose
/// ancestors' paths) share a ``ItemPath/collisionKey`` but are spelled differently.
///
/// The `folder` table counts, for every folder above a live item, how many live items are beneath it, with the
/// folder's spelling as first used.
extension SQLiteMetadataStore {
    /// Takes `path` for the live item `id` of `kind`, or refuses with ``ProtocolError/Code/pathCollision``.
    static func claim(_ path: ItemPath, kind: ItemKind, for id: ItemID, in key: ContainerKey, db: Database) throws {
        func refuse(_ why: String) -> ProtocolError {
            ProtocolError(.pathCollision, "\(path) cannot be used: \(why)")
        }
        if let other = try liveItem(key: path.collisionKey, in: key, db: db), other.id != id.string {
            throw refuse(
                other.path == path.string
                    ? "another item is there" : "it differs only in case or normalisation from \(other.path)")
        }
        if let folder = try folderPath(key: path.collisionKey, in: key, db: db) {
            guard kind == .directory else { throw refuse("\(folder) is a folder holding other items") }
            guard folder == path.string else {
                throw refuse("it differs only in case or normalisation from the folder \(folder)")
            }
        }
        // The parent's folder row, spelled as this path spells it, was made by a claim that checked every ancestor.
        // Each has kept its row and spelling since (an item beneath holds it), and no item of another kind or
        // spelling can be put at one while it has: they need no look of their own.
        let ancestors = path.ancestors
        if let nearest = ancestors.last, try folderPath(key: nearest.collisionKey, in: key, db: db) == nearest.string {
            try count(ancestors, in: key, db: db)
            return
        }
        for ancestor in ancestors {
            if let item = try liveItem(key: ancestor.collisionKey, in: key, db: db),
                item.kind != ItemKind.directory.rawValue || item.path != ancestor.string
            {
                throw refuse(
                    item.path == ancestor.string
                        ? "\(item.path) is not a folder"
                        : "\(ancestor) differs only in case or normalisation from \(item.path)")
            }
            if let folder = try folderPath(key: ancestor.collisionKey, in: key, db: db), folder != ancestor.string {
                throw refuse("\(ancestor) differs only in case or normalisation from the folder \(folder)")
            }
        }
        try count(ancestors, in: key, db: db)
    }

    /// Counts one more live item beneath each of `ancestors`.
    private static func count(_ ancestors: [ItemPath], in key: ContainerKey, db: Database) throws {
        for ancestor in ancestors {
            try db.run(
                sql: """
                    INSERT INTO folder (account_id, container_id, path_key, path, item_count) VALUES (?, ?, ?, ?, 1)
                    ON CONFLICT (account_id, container_id, path_key) DO UPDATE SET item_count = item_count + 1
                    """,
                arguments: [key.account.string, key.container.string, ancestor.collisionKey, ancestor.string])
        }
    }

    /// Gives up `path`, held by a live item that is being deleted or moved.
    static func release(_ path: ItemPath, in key: ContainerKey, db: Database) throws {
        for ancestor in path.ancestors {
            let arguments: StatementArguments = [key.account.string, key.container.string, ancestor.collisionKey]
            try db.run(
                sql: """
                    UPDATE folder SET item_count = item_count - 1
                    WHERE account_id = ? AND container_id = ? AND path_key = ?
                    """, arguments: arguments)
            try db.run(
                sql:
                    "DELETE FROM folder WHERE account_id = ? AND container_id = ? AND path_key = ? AND item_count <= 0",
                arguments: arguments)
        }
    }

    private static func liveItem(key pathKey: String, in key: ContainerKey, db: Database) throws -> (
        id: String, path: String, kind: String
    )? {
        try db.fetchRow(
            sql: """
                SELECT item_id, path, kind FROM item
                WHERE account_id = ? AND container_id = ? AND path_key = ? AND is_deleted = 0
                """,
            arguments: [key.account.string, key.container.string, pathKey]
        ).map { (id: $0["item_id"], path: $0["path"], kind: $0["kind"]) }
    }

    private static func folderPath(key pathKey: String, in key: ContainerKey, db: Database) throws -> String? {
        try db.fetchOne(
            String.self, sql: "SELECT path FROM folder WHERE account_id = ? AND container_id = ? AND path_key = ?",
            arguments: [key.account.string, key.container.string, pathKey])
    }
}
