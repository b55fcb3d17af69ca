import DocumentKit
import Foundation
import Logging
import Synchronization
import UbiquityKit

/// The option naming a store's content in the ubiquity container (Core Data's
/// `NSPersistentStoreUbiquitousContentNameKey`): its logs live under `<content URL>/<name>/`.
public let NSPersistentStoreUbiquitousContentNameKey = "NSPersistentStoreUbiquitousContentNameKey"
/// The option giving the folder of the ubiquity container where a store's logs live (Core Data's
/// `NSPersistentStoreUbiquitousContentURLKey`), such as `container/TransactionLogs`.
public let NSPersistentStoreUbiquitousContentURLKey = "NSPersistentStoreUbiquitousContentURLKey"
/// The option asking for lightweight migration on open (Core Data's `NSMigratePersistentStoresAutomaticallyOption`);
/// stores always migrate lightweight changes, so it is accepted and changes nothing.
public let NSMigratePersistentStoresAutomaticallyOption = "NSMigratePersistentStoresAutomaticallyOption"
/// The option asking to infer the mapping model (Core Data's `NSInferMappingModelAutomaticallyOption`); accepted.
public let NSInferMappingModelAutomaticallyOption = "NSInferMappingModelAutomaticallyOption"

/// One store a coordinator opened: a SQLite file (or memory), and for a store with ubiquitous options, the
/// folder of the container where its saves go as logs and other devices' logs are read from.
public final class PersistentStore: Sendable, CustomStringConvertible {
    /// The kinds of store.
    public enum StoreType: String, Sendable, Hashable {
        /// A SQLite database file (Core Data's `NSSQLiteStoreType`).
        case sqlite
        /// A database in memory, gone with the process (Core Data's `NSInMemoryStoreType`).
        case inMemory
    }

    /// The store's kind.
    public let type: StoreType
    /// The store's file; `nil` in memory.
    public let url: URL?
    /// The options it was added with.
    public let options: [String: any Sendable]
    /// The store's identity, also its device folder's name among the store's logs.
    public let identifier: String
    /// `<content URL>/<content name>`: every device's folder of logs; `nil` for a store without ubiquitous options.
    public let ubiquitousContentFolder: URL?

    let database: RecordDatabase
    /// After how many saves the store writes a baseline (``RecordStoreBaselineThresholdOption``).
    let baselineThreshold: Int
    /// For a store in a signed-in container: where each account's store lives.
    let binding: AccountBinding?
    /// For such a store: the account it belongs to; `nil` for the one used while signed out.
    let account: UbiquityIdentityToken?
    private let logger = Logger(label: "RecordStore.PersistentStore")
    private let compacting = Mutex(Compaction.Memory())
    /// Writes the logs of saves into the container after the saves return.
    let exporter: LogExporter
    /// The option giving how long after the first log written since a flush the logs are flushed together (a
    /// `Duration`; 1 s by default, zero to flush before a save's log is reported written, `nil` for only every
    /// ``RecordDatabase/logsFlushedTogether`` logs).
    static let logFlushDelayOption = "RecordStoreLogFlushDelay"

    init(
        type: StoreType, url: URL?, options: [String: any Sendable], model: ManagedObjectModel,
        binding: AccountBinding? = nil, account: UbiquityIdentityToken? = nil
    ) throws(RecordStoreError) {
        self.binding = binding
        self.account = account
        exporter = LogExporter(
            flushDelay: options.keys.contains(Self.logFlushDelayOption)
                ? options[Self.logFlushDelayOption] as? Duration : .seconds(1),
            work: { store, logs, incomplete in store.writeLogs(logs, incomplete: incomplete) },
            flush: { store in
                do {
                    try store.database.flushExportedLogs()
                } catch {
                    store.logger.error("the store's logs could not be made durable; tried again later: \(error)")
                }
            })
        baselineThreshold = options[RecordStoreBaselineThresholdOption] as? Int ?? Compaction.defaultThreshold
        let name = options[NSPersistentStoreUbiquitousContentNameKey] as? String
        let contentURL = options[NSPersistentStoreUbiquitousContentURLKey] as? URL
        switch (name, contentURL) {
        case (nil, nil): ubiquitousContentFolder = nil
        case (let name?, let contentURL?):
            guard Self.isValidContentName(name) else {
                throw RecordStoreError(
                    .storeFailed,
                    "the ubiquitous content name \(String(reflecting: name)) must be 1 to 128 ASCII letters, digits, "
                        + "_, - and ., starting with a letter or digit")
            }
            ubiquitousContentFolder = contentURL.appendingPathComponent(name, isDirectory: true)
        default:
            throw RecordStoreError(
                .storeFailed,
                "a ubiquitous store needs both \(NSPersistentStoreUbiquitousContentNameKey) and "
                    + "\(NSPersistentStoreUbiquitousContentURLKey)")
        }
        if type == .sqlite, url == nil { throw RecordStoreError(.storeFailed, "a SQLite store needs a file URL") }
        if let url {
            try? FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        }
        self.type = type
        self.url = url
        self.options = options
        self.database = try RecordDatabase(url: type == .sqlite ? url : nil, model: model)
        self.identifier = database.replica.uuidString
        self.logFolder = ubiquitousContentFolder?.appendingPathComponent(identifier, isDirectory: true)
        if let logFolder {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: logFolder.path)) ?? []
            // A log removed once a baseline held it leaves its number in the baseline's name.
            let highest = names.compactMap { Compaction.sequence(ofFile: $0)?.sequence }.max() ?? 0
            try database.raiseSequence(toAtLeast: highest)
        } else {
            // Logs kept while the store had ubiquitous options go nowhere now; its saves keep none.
            _ = try? database.write { access in try access.db.execute(sql: "DELETE FROM rs_outbox") }
        }
        // Saves whose logs a crash kept from the container are there once the store is open.
        writeLogs([], incomplete: true, opening: true)
    }

    deinit {
        exporter.stop()
    }

    /// Whether `name` can name a store's content: a folder name that is neither hidden nor `..`, the same on every
    /// file system. Reverse-DNS names (the book's `com.studiomagnolia.coredata.grocery`) are fine.
    static func isValidContentName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.utf8.count <= 128 else { return false }
        func isLetterOrDigit(_ scalar: Unicode.Scalar) -> Bool {
            scalar.isASCII
                && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar))
        }
        return isLetterOrDigit(first)
            && name.unicodeScalars.allSatisfy { isLetterOrDigit($0) || "_-.".unicodeScalars.contains($0) }
    }

    /// Writes the store's progress, a baseline when one is due, and removes its files no device needs, one pass at a
    /// time: a save and an import finishing together would otherwise write the same files at once.
    /// After a save (`afterSave`), files are looked for only when a baseline was written: what may be removed depends
    /// on the other devices' progress, which only an import brings.
    /// - Parameter saved: After a save, its log's sequence: a pass that would find nothing to do is skipped.
    func compact(afterSave: Bool = false, saved: UInt64? = nil) throws(RecordStoreError) {
        guard let folder = ubiquitousContentFolder else { return }
        try compacting.withLock { memory throws(RecordStoreError) in
            try Compaction.run(
                store: self, folder: folder, threshold: baselineThreshold, memory: &memory, afterSave: afterSave,
                saved: saved)
        }
    }

    /// Whether the store belongs to the account signed in now (always, for a store outside a signed-in container).
    var belongsToSignedInAccount: Bool {
        guard let binding else { return true }
        return binding.ubiquity.identityToken == account
    }

    /// This device's folder of logs.
    let logFolder: URL?

    /// Has the logs of saves not yet in the container written, after the save that asks has returned: `justSaved`,
    /// its own log, is written from its bytes. A store without ubiquitous options writes none.
    func didSave(justSaved: RecordDatabase.KeptLog?) {
        guard logFolder != nil else { return }
        exporter.request(justSaved, from: self)
    }

    /// Waits until the logs of every save this store made before the call are written to its folder of the container,
    /// where the device's engine takes them (their flush to the disk follows in groups; a save itself is durable once
    /// `save()` returns, and its log is kept in the store until the log is durable too). Saves write their logs after
    /// they return, so that no save waits on the container's file system; this is for what must see the files, such
    /// as a test of the container's contents or a tool that copies them. A store without ubiquitous options, or of an
    /// account no longer signed in, returns at once.
    public func waitUntilLogsWritten() {
        exporter.waitUntilWritten()
    }

    /// Writes the logs of saves not yet in the container — `logs` from the bytes their saves kept, the others (all of
    /// them when `incomplete`) read back from the outbox — then the store's progress, and a baseline when one is due.
    /// A failure is logged and tried again after the next save and on the next open: the saves are safe in the outbox
    /// meanwhile.
    /// - Parameter opening: For the store being opened: the progress and baselines are looked at whatever was saved.
    func writeLogs(_ logs: [RecordDatabase.KeptLog], incomplete: Bool, opening: Bool = false) {
        // A store without ubiquitous options keeps no logs (its outbox was emptied when it opened): a save is its
        // one transaction and its one flush.
        guard let logFolder else { return }
        // A save made as the account changed stays in the outbox: the container holds another account's content
        // now. It is written when this account's store is next opened.
        guard belongsToSignedInAccount else { return }
        // Two contexts saving at once may ask out of their sequences' order.
        let ordered = logs.sorted { $0.sequence < $1.sequence }
        do {
            for log in ordered { try database.exportOutbox(to: logFolder, justSaved: log) }
            if incomplete || ordered.isEmpty { try database.exportOutbox(to: logFolder) }
        } catch {
            logger.error("the store's logs could not be written; they are kept and written later: \(error)")
            return
        }
        do {
            try compact(afterSave: true, saved: opening ? nil : database.exportedSequence)
        } catch {
            logger.error("the store's progress or baseline could not be written: \(error)")
        }
    }

    public var description: String { "<PersistentStore \(type) \(url?.path ?? "memory") \(identifier)>" }
}
