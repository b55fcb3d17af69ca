import DocumentKit
import Foundation
import GRDB
import Logging
import Synchronization

/// A store's database: SQLite through GRDB in WAL mode, laid out by ``StoreSchema``, with the store's bookkeeping
/// beside the objects — its replica id, clock and save sequence (`rs_meta`), the logs of its saves not yet written
/// to the container (`rs_outbox`), the other devices' logs it applied (`rs_applied`) and those of newer models it
/// keeps for later (`rs_pending`).
///
/// Every save and every import is one transaction; a save's log is written into the outbox in the save's
/// transaction and exported after it, so a crash at any moment leaves the store and its logs in agreement once
/// the store is opened again (``exportOutbox(to:)``).
final class RecordDatabase: Sendable {
    let writer: any DatabaseWriter
    let schema: StoreSchema
    /// Held while logs are exported (``Export``).
    private let exporting = Mutex(Export())
    /// The newest log written to the container since the database was opened.
    private let exported = Atomic<UInt64>(0)
    /// The newest log made durable in the container since the database was opened. Its outbox row, and those before
    /// it, go with the next save's transaction; until then (and after a crash or a power loss) they are written
    /// again with the same bytes.
    private let durable = Atomic<UInt64>(0)

    /// How many logs are written, at most, before they are flushed together: a save's flush is its transaction's,
    /// and its log, kept in the outbox until flushed, shares one flush of the file system with the others written
    /// within a second (``PersistentStore``'s flush delay) or with this many.
    static let logsFlushedTogether = 1_024

    private static let logger = Logger(label: "RecordStore.RecordDatabase")

    struct Export {
        /// The folders whose leftover temporary files were removed since the database was opened (a killed write
        /// leaves one only before this open, so each folder is swept once), and that were made if missing.
        var swept: Set<URL> = []
        /// How many logs were written and not flushed yet, and the sequence of the newest.
        var unflushed = 0
        var newestUnflushed: UInt64 = 0
        /// A descriptor of the folder of `unflushed`, opened before the first of them was written: the flush is one
        /// `syncfs` through it, which reports any write-back error of the file system since it was opened.
        var sync: (folder: URL, descriptor: Int32)?
        /// Set when a flush failed: the logs not known durable are written again from the outbox, even those whose
        /// file reads whole (a failed write-back leaves the page cache clean, so the file reads right and is not).
        var rewritesAll = false
        /// Whether the outbox was written out since the database was opened.
        var caughtUp = false

        /// Opens the descriptor the flush of logs about to be written into `folder` goes through, unless one is open
        /// (the export flushes the logs of another folder first).
        mutating func prepareSync(of folder: URL) throws(RecordStoreError) {
            guard sync == nil else { return }
            let descriptor = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard descriptor >= 0 else {
                let code = errno
                throw RecordStoreError(
                    .storeFailed, "\(folder.path) cannot be opened: \(String(cString: strerror(code)))")
            }
            sync = (folder, descriptor)
        }

        /// Forgets the logs written since the last flush, and closes the descriptor for theirs.
        mutating func forgetUnflushed() {
            if let sync { Foundation.close(sync.descriptor) }
            sync = nil
            unflushed = 0
        }
    }

    /// A log a save just kept in the outbox: its sequence and bytes, handed to ``exportOutbox(to:justSaved:)`` so that
    /// the export need not read them back.
    struct KeptLog: Sendable {
        let sequence: UInt64
        let bytes: Data
    }
    /// The device this store saves as.
    let replica: UUID
    /// Where large values live (``ExternalData``); `nil` in memory.
    let external: ExternalData?

    /// Opens (creating and migrating as needed) the database at `url`, or a new one in memory when `url` is `nil`.
    /// - Throws: ``RecordStoreError/Code/invalidModel`` for a model with problems; ``RecordStoreError/Code/newerModel``
    ///   for a store written by a newer model than `model`; ``RecordStoreError/Code/storeFailed`` when the database
    ///   cannot be opened.
    init(url: URL?, model: ManagedObjectModel) throws(RecordStoreError) {
        try model.validate()
        let schema = StoreSchema(model: model)
        self.schema = schema
        let external = url.map(ExternalData.init(storeURL:))
        self.external = external
        do {
            if let url {
                var configuration = Configuration()
                configuration.busyMode = .timeout(10)
                // A commit must survive a power loss once its log may be in the container: in WAL mode GRDB's
                // NORMAL would let a committed save (and its sequence number) vanish after its log was written.
                configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
                let pool = try DatabasePool(path: url.path, configuration: configuration)
                // Set again on the writer once the pool is open: the pool sets NORMAL there after preparing it.
                try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
                writer = pool
            } else {
                writer = try DatabaseQueue()
            }
            replica = try writer.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE IF NOT EXISTS rs_meta (key TEXT PRIMARY KEY NOT NULL, value);
                        CREATE TABLE IF NOT EXISTS rs_outbox (sequence INTEGER PRIMARY KEY NOT NULL, log BLOB NOT NULL);
                        CREATE TABLE IF NOT EXISTS rs_applied (
                            device BLOB NOT NULL, sequence INTEGER NOT NULL, PRIMARY KEY (device, sequence))
                            WITHOUT ROWID;
                        CREATE TABLE IF NOT EXISTS rs_floor (
                            device BLOB PRIMARY KEY NOT NULL, sequence INTEGER NOT NULL) WITHOUT ROWID;
                        CREATE TABLE IF NOT EXISTS rs_pending (
                            device BLOB NOT NULL, sequence INTEGER NOT NULL, version INTEGER NOT NULL,
                            log BLOB NOT NULL, PRIMARY KEY (device, sequence));
                        """)
                let access = StoreAccess(db: db, schema: schema, external: external)
                let stored = try access.integerMeta("modelVersion")
                guard stored <= Int64(model.version) else {
                    throw RecordStoreError(
                        .newerModel,
                        "the store was written by model \(stored), newer than this app's \(model.version)")
                }
                try schema.create(in: db)
                try access.setMeta("modelVersion", Int64(model.version))
                if try access.meta("replica") == nil { try access.setMeta("replica", UUID().data) }
                return try access.replica()
            }
        } catch let error as RecordStoreError {
            throw error
        } catch {
            throw RecordStoreError(.storeFailed, "the store's database cannot be opened", underlying: error)
        }
    }

    var model: ManagedObjectModel { schema.model }

    /// Runs `body` in one write transaction; any error rolls all of it back.
    /// Closes the database: later reads and writes fail.
    func close() throws(RecordStoreError) {
        // The descriptors kept for the next flush go too; logs not flushed stay in the outbox for the next open.
        exporting.withLock { export in export.forgetUnflushed() }
        do {
            if let pool = writer as? DatabasePool { try pool.close() }
            if let queue = writer as? DatabaseQueue { try queue.close() }
        } catch {
            throw RecordStoreError(.storeFailed, "the store could not be closed: \(error)")
        }
    }

    func write<T>(_ body: (inout StoreAccess) throws -> T) throws(RecordStoreError) -> T {
        try wrapped {
            try writer.write { db in
                var access = StoreAccess(db: db, schema: schema, external: external)
                return try body(&access)
            }
        }
    }

    /// Runs `body` on a snapshot of the committed database.
    func read<T>(_ body: (StoreAccess) throws -> T) throws(RecordStoreError) -> T {
        try wrapped { try writer.read { db in try body(StoreAccess(db: db, schema: schema, external: external)) } }
    }

    private func wrapped<T>(_ body: () throws -> T) throws(RecordStoreError) -> T {
        do {
            return try body()
        } catch let error as RecordStoreError {
            throw error
        } catch {
            throw RecordStoreError(.storeFailed, "the store's database failed", underlying: error)
        }
    }

    /// The file name of the log `sequence` in a device's folder: the number, zero-padded so names sort in order.
    static func logFileName(_ sequence: UInt64) -> String {
        let digits = String(sequence)
        return String(repeating: "0", count: max(0, 12 - digits.count)) + digits + ".log"
    }

    /// Writes the logs of saves not yet in `folder` (this device's folder of the container), each safely, then
    /// forgets them. A log written before a crash is written again whole, with the same bytes.
    /// - Returns: How many logs were written.
    /// - Parameter justSaved: The log of the save that asks, written straight to its file when it is the next log
    ///   to export and its folder was prepared since the database was opened (no earlier file of that name can be
    ///   there: the sequence was raised past every file in the folder at open).
    @discardableResult
    func exportOutbox(to folder: URL, justSaved: KeptLog? = nil) throws(RecordStoreError) -> Int {
        // Two contexts saving at once export one at a time: each removes what a killed write left, never the
        // other's file being written.
        try exporting.withLock { export throws(RecordStoreError) -> Int in
            if let sync = export.sync, sync.folder != folder { try flush(&export) }
            // Written already, with every log before it: the export writes the outbox's logs in order.
            if let justSaved, justSaved.sequence <= exported.load(ordering: .acquiring) { return 0 }
            if let justSaved, justSaved.sequence == exported.load(ordering: .acquiring) + 1,
                export.swept.contains(folder), writeNewLog(justSaved, in: folder, export: &export)
            {
                return 1
            }
            return try exportUnlocked(to: folder, export: &export)
        }
    }

    /// Writes a save's log as a new file of `folder`, without Foundation's URLs or a search for a file of its name:
    /// a temporary file of the safe writer's naming, renamed into place, flushed later with the others.
    /// - Returns: Whether it was written; on `false` nothing was, and the outbox's export writes it.
    private func writeNewLog(_ log: KeptLog, in folder: URL, export: inout Export) -> Bool {
        let name = Self.logFileName(log.sequence)
        let folderPath = folder.path
        let destination = folderPath + "/" + name
        let temporary = folderPath + "/." + name + "." + String(UInt64.random(in: 0...UInt64.max), radix: 16) + ".tmp"
        guard (try? export.prepareSync(of: folder)) != nil else { return false }
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return false }
        let written = log.bytes.withUnsafeBytes { bytes -> Bool in
            var offset = 0
            while offset < bytes.count {
                let count = Foundation.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        Foundation.close(descriptor)
        guard written, rename(temporary, destination) == 0 else {
            unlink(temporary)
            return false
        }
        export.unflushed += 1
        export.newestUnflushed = log.sequence
        exported.store(log.sequence, ordering: .releasing)
        if export.unflushed >= Self.logsFlushedTogether {
            do {
                try flush(&export)
            } catch {
                // Written: the flush is tried again with the next save's, and the outbox keeps the log meanwhile.
                Self.logger.error("the store's logs could not be made durable; tried again later: \(error)")
            }
        }
        return true
    }

    deinit {
        exporting.withLock { export in export.forgetUnflushed() }
    }

    /// Removes what killed writes of logs left in `folder`: `.<log name>.<hex>.tmp`, the safe writer's temporaries.
    private static func removeStaleTemporaries(in folder: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where name.hasPrefix(".") && name.hasSuffix(".tmp") {
            let parts = name.dropFirst().split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4, UInt64(parts[0]) != nil, parts[1] == "log", !parts[2].isEmpty,
                parts[2].allSatisfy(\.isHexDigit)
            else { continue }
            SafeFileWriter.removeTree(at: folder.appendingPathComponent(name, isDirectory: false))
        }
    }

    /// The newest log written to the container since the database was opened.
    var exportedSequence: UInt64 { exported.load(ordering: .acquiring) }

    /// The newest log made durable in the container since the database was opened (see `durable`).
    var durableSequence: UInt64 { durable.load(ordering: .acquiring) }

    /// Raises the save sequence to at least `sequence`: the highest log of this store found in its folder. A save
    /// lost with its database (restored from a backup, or a power loss before the database was durable) never
    /// reuses the number of a log other devices may have applied.
    func raiseSequence(toAtLeast sequence: UInt64) throws(RecordStoreError) {
        try write { access in
            if UInt64(try access.integerMeta("sequence")) < sequence {
                try access.setMeta("sequence", Int64(sequence))
            }
        }
    }

    private func exportUnlocked(to folder: URL, export: inout Export) throws(RecordStoreError) -> Int {
        let pending = try read { access in
            try Row.fetchAll(
                access.db, sql: "SELECT sequence, log FROM rs_outbox WHERE sequence > ? ORDER BY sequence",
                arguments: [Int64(exported.load(ordering: .acquiring))]
            ).map {
                (UInt64($0[0] as Int64), $0[1] as Data)
            }
        }
        guard !pending.isEmpty else { return 0 }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // A write that a crash cut short left its temporary file (only this store writes here): swept once, as
            // listing the folder for each save would cost more than the save once the folder fills.
            if export.swept.insert(folder).inserted { Self.removeStaleTemporaries(in: folder) }
            try export.prepareSync(of: folder)
            // Once the outbox was written out after the open, a log not written since has no file: no crash came
            // between (unless a flush failed, and then every log not known durable is written again).
            for (index, (sequence, bytes)) in pending.enumerated() {
                if export.caughtUp, !export.rewritesAll,
                    writeNewLog(KeptLog(sequence: sequence, bytes: bytes), in: folder, export: &export)
                {
                    // Its flush of the logs so far failed: the next export writes again every log since the last
                    // durable one, these too.
                    if export.rewritesAll { return index + 1 }
                    continue
                }
                let destination = folder.appendingPathComponent(Self.logFileName(sequence), isDirectory: false)
                // Already there whole (the outbox keeps logs until they are flushed): flushed with the others, not
                // written again, which would look like a change to the engine and to every other device.
                if export.rewritesAll || FileManager.default.contents(atPath: destination.path) != bytes {
                    // Renamed into place whole, so no one sees part of a log; flushed below with others.
                    try SafeFileWriter.replaceItem(
                        at: destination, synchronizesContents: false, synchronizesDirectory: false
                    ) { temporary in
                        try SafeFileWriter.writeFile(bytes, to: temporary, synchronizes: false)
                    }
                }
                export.unflushed += 1
                export.newestUnflushed = sequence
            }
        } catch {
            throw RecordStoreError(
                .storeFailed, "the store's logs cannot be written to \(folder.path)", underlying: error)
        }
        exported.store(pending.last!.0, ordering: .releasing)
        export.rewritesAll = false
        export.caughtUp = true
        if export.unflushed >= Self.logsFlushedTogether { try flush(&export) }
        return pending.count
    }

    /// Makes the logs written since the last flush durable, with their folders; their outbox rows then go with the
    /// next save.
    private func flush(_ export: inout Export) throws(RecordStoreError) {
        do {
            try flushUnflushed(&export)
        } catch {
            // A flush that failed is never tried again on the same files: Linux reports a lost write-back once and
            // marks the pages clean, so a second try would succeed without the bytes being on the disk. The logs since
            // the last durable one are written again from the outbox, which keeps them meanwhile.
            export.forgetUnflushed()
            export.rewritesAll = true
            exported.store(durable.load(ordering: .acquiring), ordering: .releasing)
            throw error
        }
    }

    private func flushUnflushed(_ export: inout Export) throws(RecordStoreError) {
        guard let sync = export.sync else { return }
        // One flush of the file system for every log written since the descriptor was opened, and their names.
        guard Self.syncFileSystem(sync.descriptor) == 0 else {
            let code = errno
            throw RecordStoreError(
                .storeFailed,
                "the logs in \(sync.folder.path) cannot be made durable: \(String(cString: strerror(code)))")
        }
        export.forgetUnflushed()
        durable.store(export.newestUnflushed, ordering: .releasing)
    }

    /// `syncfs(2)`: flushes the file system of `descriptor`, and reports any write-back error on it since the
    /// descriptor was opened. Glibc's Swift module leaves it out; where the C library has none, all is flushed.
    private static func syncFileSystem(_ descriptor: Int32) -> Int32 {
        guard let syncfs = syncfs else {
            sync()
            return 0
        }
        return syncfs(descriptor)
    }

    private static let syncfs: (@convention(c) (Int32) -> Int32)? = {
        #if os(Linux)
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "syncfs") else { return nil }
            return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
        #else
            return nil
        #endif
    }()

    /// Flushes the logs written and not flushed yet: for a store being removed, or whose saves paused.
    func flushExportedLogs() throws(RecordStoreError) {
        try exporting.withLock { export throws(RecordStoreError) in
            guard export.unflushed > 0 else { return }
            try flush(&export)
        }
    }
}
