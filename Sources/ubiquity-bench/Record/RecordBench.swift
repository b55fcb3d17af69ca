import Foundation
import GRDB
import RecordStore

/// What the record benchmarks share: stores opened as an app opens them, and the baseline — a GRDB database set up
/// as the record store sets up its own (a pool in WAL mode, `synchronous = FULL`, a 10 s busy timeout) in which the
/// same rows are written and read directly, with prepared statements.
enum RecordBench {
    /// The content name of ubiquitous stores: their logs go to `<content URL>/Bench/<store id>/`.
    static let contentName = "Bench"

    /// Core Data's options for a store whose logs go to `content`; a local store's when `content` is `nil`.
    static func options(content: URL?) -> [String: any Sendable] {
        var options: [String: any Sendable] = [NSMigratePersistentStoresAutomaticallyOption: true]
        if let content {
            options[NSPersistentStoreUbiquitousContentNameKey] = contentName
            options[NSPersistentStoreUbiquitousContentURLKey] = content
        }
        return options
    }

    /// Where a round's store lives in `folder`: `ubiquitous.sqlite` with its content folder, or `local.sqlite`.
    static func place(ubiquitous: Bool, in folder: URL) -> (store: URL, content: URL?) {
        ubiquitous
            ? (
                folder.appendingPathComponent("ubiquitous.sqlite"),
                folder.appendingPathComponent("content", isDirectory: true)
            )
            : (folder.appendingPathComponent("local.sqlite"), nil)
    }

    /// A coordinator with one SQLite store at `url`: ubiquitous, with its logs under `content`, or local.
    static func coordinator(store url: URL, content: URL?) throws -> PersistentStoreCoordinator {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: RecordBenchModel.model)
        try coordinator.addPersistentStore(
            type: .sqlite, configuration: nil, at: url, options: options(content: content))
        return coordinator
    }

    /// A new private-queue context on `coordinator`.
    static func context(_ coordinator: PersistentStoreCoordinator) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    /// The baseline's database at `url`: a GRDB pool (WAL) like `RecordStore`'s own, with `synchronous` set to
    /// `FULL` as `RecordDatabase` asks for it (or `NORMAL`), and the tables of items and readings.
    ///
    /// A pool sets `synchronous = NORMAL` on its writer as it switches it to WAL, after `prepareDatabase` has run,
    /// so the setting is made here once the pool is open, and read back.
    static func pool(at url: URL, synchronous: Synchronous = .full) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let pool = try DatabasePool(path: url.path, configuration: configuration)
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous.rawValue)")
            let setting = try Int.fetchOne(db, sql: "PRAGMA synchronous")
            guard setting == synchronous.level else {
                throw BenchError("the baseline's synchronous setting is \(setting ?? -1), not \(synchronous.rawValue)")
            }
        }
        try pool.write { db in
            try db.execute(sql: ItemValues.createSQL)
            try db.execute(sql: ReadingValues.createSQL)
        }
        return pool
    }

    /// SQLite's `synchronous` settings the baseline runs with.
    enum Synchronous: String {
        /// Every commit flushes the WAL: what `RecordDatabase` asks for.
        case full = "FULL"
        /// The WAL is flushed at checkpoints only: GRDB's default for a pool.
        case normal = "NORMAL"

        /// The value `PRAGMA synchronous` reads back.
        var level: Int { self == .full ? 2 : 1 }
    }

    /// Removes a database and its WAL files, or a folder.
    static func remove(_ url: URL) {
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: url.path + suffix)
        }
    }

    /// Milliseconds of `duration`.
    static func milliseconds(_ duration: Duration) -> Double { Measure.microseconds(duration) / 1000 }
}

// MARK: - The rows written directly

extension ItemValues: FetchableRecord {
    static let createSQL = """
        CREATE TABLE item (
            id BLOB PRIMARY KEY NOT NULL, title TEXT NOT NULL, quantity INTEGER NOT NULL, price REAL NOT NULL,
            added REAL NOT NULL)
        """

    /// Decodes a row of `SELECT id, title, quantity, price, added`.
    init(row: Row) {
        id = row[0]
        title = row[1]
        quantity = row[2]
        price = row[3]
        added = Date(timeIntervalSinceReferenceDate: row[4])
    }

    /// Inserts `items` with one prepared statement.
    static func insert(_ items: [ItemValues], into db: Database) throws {
        let statement = try db.cachedStatement(
            sql: "INSERT INTO item (id, title, quantity, price, added) VALUES (?, ?, ?, ?, ?)")
        for item in items {
            try statement.execute(arguments: [
                item.id, item.title, item.quantity, item.price, item.added.timeIntervalSinceReferenceDate,
            ])
        }
    }
}

extension ReadingValues {
    static let createSQL = """
        CREATE TABLE reading (
            id BLOB PRIMARY KEY NOT NULL, label TEXT NOT NULL, site TEXT NOT NULL, unit TEXT NOT NULL,
            sequence INTEGER NOT NULL, count INTEGER NOT NULL, status INTEGER NOT NULL, value REAL NOT NULL,
            low REAL NOT NULL, high REAL NOT NULL, taken REAL NOT NULL)
        """

    /// Inserts `readings` with one prepared statement.
    static func insert(_ readings: [ReadingValues], into db: Database) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO reading (id, label, site, unit, sequence, count, status, value, low, high, taken)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        for reading in readings {
            try statement.execute(arguments: [
                reading.id, reading.label, reading.site, reading.unit, reading.sequence, reading.count,
                reading.status, reading.value, reading.low, reading.high, reading.taken.timeIntervalSinceReferenceDate,
            ])
        }
    }
}
