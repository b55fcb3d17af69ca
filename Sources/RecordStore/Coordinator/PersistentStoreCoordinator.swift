import DocumentKit
import Foundation
import Logging
import Synchronization
import UbiquityKit

/// Opens stores for a model and brings other devices' saves into them, as Core Data's
/// `NSPersistentStoreCoordinator` with iCloud's ubiquitous options.
///
/// ```swift
/// let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
/// try await coordinator.addPersistentStore(type: .sqlite, configuration: nil, at: storeURL, options: [
///     NSPersistentStoreUbiquitousContentNameKey: "Grocery",
///     NSPersistentStoreUbiquitousContentURLKey: containerURL.appendingPathComponent("TransactionLogs"),
///     NSMigratePersistentStoresAutomaticallyOption: true,
/// ])
/// ```
///
/// A store with ubiquitous options writes each save as a log in its device's folder of the content, and imports
/// the logs other devices' stores write there as they appear, posting
/// ``didImportUbiquitousContentChangesNotification`` with the ids of what each import changed.
public final class PersistentStoreCoordinator: Sendable {
    /// The model every store of the coordinator holds.
    public let managedObjectModel: ManagedObjectModel

    private let stores = Mutex<[PersistentStore]>([])
    private let imports = EventBroadcast<ObjectIDChanges>()
    private let watchers = Mutex<[ObjectIdentifier: ContentWatcher]>([:])
    let transitionBroadcast = EventBroadcast<StoreTransition>()
    /// Follows the signed-in account of the UbiquityKit instance whose container holds a store's content.
    let followingTask = Mutex<Task<Void, Never>?>(nil)
    private let importQueue = DispatchQueue(label: "RecordStore.PersistentStoreCoordinator.import")
    /// Held by ``lock()``, and around adding a store and each import.
    private let coordinatorLock = NSRecursiveLock()
    let logger = Logger(label: "RecordStore.PersistentStoreCoordinator")

    /// How many objects one transaction of an import may change before the rest is left to another: each batch is
    /// committed and posted on its own, so a large first import shows progress and holds one batch's ids at a time.
    package let importBatchLimit: Int

    /// Makes a coordinator for `managedObjectModel`.
    public convenience init(managedObjectModel: ManagedObjectModel) {
        self.init(managedObjectModel: managedObjectModel, importBatchLimit: 10_000)
    }

    /// Makes a coordinator whose imports commit and post every `importBatchLimit` changed objects.
    package init(managedObjectModel: ManagedObjectModel, importBatchLimit: Int) {
        self.managedObjectModel = managedObjectModel
        self.importBatchLimit = max(1, importBatchLimit)
    }

    deinit {
        for watcher in watchers.withLock({ $0.values }) { FileCoordinator.removeFilePresenter(watcher) }
        followingTask.withLock { $0?.cancel() }
        imports.finish()
        transitionBroadcast.finish()
    }

    /// The stores added, in order.
    public var persistentStores: [PersistentStore] { stores.withLock { $0 } }

    /// Posted after an import applied other devices' saves, with the coordinator as object and the ids of the
    /// objects inserted, updated and deleted under ``NSInsertedObjectsKey``, ``NSUpdatedObjectsKey`` and
    /// ``NSDeletedObjectsKey`` (Core Data's `NSPersistentStoreDidImportUbiquitousContentChangesNotification`).
    public static let didImportUbiquitousContentChangesNotification = Notification.Name(
        "NSPersistentStoreDidImportUbiquitousContentChangesNotification")

    /// Every import from now on, for as long as the stream is iterated.
    public func importedChanges() -> AsyncStream<ObjectIDChanges> { imports.stream() }

    /// Takes the coordinator's lock, waiting while another thread holds it, as the book does around adding its
    /// store. Adding a store and importing other devices' logs take it too, so neither runs while a caller holds
    /// it. The lock is recursive: the thread holding it may add stores.
    public func lock() { coordinatorLock.lock() }

    /// Takes the lock if no other thread holds it; returns whether it did.
    public func tryLock() -> Bool { coordinatorLock.try() }

    /// Lets go of the lock taken by ``lock()`` or ``tryLock()``.
    public func unlock() { coordinatorLock.unlock() }

    /// Opens (creating or migrating as needed) a store and adds it.
    ///
    /// With ``NSPersistentStoreUbiquitousContentNameKey`` and ``NSPersistentStoreUbiquitousContentURLKey``, the
    /// store's saves go to the container as logs, and the logs of other devices already there are imported before
    /// this returns; later ones as they appear.
    /// - Parameters:
    ///   - type: The kind of store.
    ///   - configuration: Must be `nil`: every entity of the model is in the store.
    ///   - url: The store's file (for ``PersistentStore/StoreType/sqlite``).
    ///   - options: Core Data's options.
    /// - Throws: ``RecordStoreError/Code/invalidModel``, ``RecordStoreError/Code/newerModel`` (the store was
    ///   written by a newer model), ``RecordStoreError/Code/storeFailed``.
    @discardableResult
    public func addPersistentStore(
        type: PersistentStore.StoreType = .sqlite, configuration: String? = nil, at url: URL?,
        options: [String: any Sendable]? = nil
    ) throws(RecordStoreError) -> PersistentStore {
        guard configuration == nil else {
            throw RecordStoreError(.storeFailed, "configurations are not supported; pass nil")
        }
        let options = options ?? [:]
        coordinatorLock.lock()
        defer { coordinatorLock.unlock() }
        let store: PersistentStore
        if type == .sqlite, let url, let binding = AccountBinding(url: url, options: options) {
            // In a signed-in container: the store of the account signed in now, and another when it changes.
            store = try binding.openStore(for: binding.ubiquity.identityToken, model: managedObjectModel)
            follow(binding.ubiquity)
        } else {
            store = try PersistentStore(type: type, url: url, options: options, model: managedObjectModel)
        }
        stores.withLock { $0.append(store) }
        try attach(store)
        return store
    }

    /// Starts importing `store`'s content: what is there now, and what appears later.
    func attach(_ store: PersistentStore) throws(RecordStoreError) {
        guard let folder = store.ubiquitousContentFolder else { return }
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try importBatches()
        let watcher = ContentWatcher(folder: folder, own: store.logFolder) { [weak self] in self?.scheduleImport() }
        watchers.withLock { $0[ObjectIdentifier(store)] = watcher }
        FileCoordinator.addFilePresenter(watcher)
        // Logs that came between the first import and the watch.
        scheduleImport()
        if store.binding != nil { completeInitialImport(of: store) }
    }

    /// Removes `store` (Core Data's `remove(_:)`): it stops importing other devices' logs at once — an import under
    /// way finishes first, none starts after — and contexts no longer fetch from it or save to it. Its files stay.
    /// - Throws: ``RecordStoreError/Code/storeNotAdded`` when `store` is not one of this coordinator's.
    public func remove(_ store: PersistentStore) throws(RecordStoreError) {
        coordinatorLock.lock()
        defer { coordinatorLock.unlock() }
        guard persistentStores.contains(where: { $0 === store }) else {
            throw RecordStoreError(.storeNotAdded, "\(store) is not a store of this coordinator")
        }
        replace(store, with: nil)
        store.waitUntilLogsWritten()
        do {
            try store.database.flushExportedLogs()
        } catch {
            logger.error(
                "the removed store's newest logs could not be flushed; they are kept for its next open: \(error)")
        }
    }

    /// Puts `new` in `old`'s place among the stores (or just removes `old`), and stops importing `old`'s content.
    func replace(_ old: PersistentStore, with new: PersistentStore?) {
        stores.withLock { stores in
            guard let index = stores.firstIndex(where: { $0 === old }) else { return }
            if let new { stores[index] = new } else { stores.remove(at: index) }
        }
        if let watcher = watchers.withLock({ $0.removeValue(forKey: ObjectIdentifier(old)) }) {
            FileCoordinator.removeFilePresenter(watcher)
        }
    }

    /// Adds a store off the caller's thread, as the book does before telling the interface it is ready.
    ///
    /// The add (opening, migrating, the first import) runs on a queue of its own, not `DispatchQueue.global()`: on
    /// Linux that is the pool Swift concurrency runs on, one thread a core, which blocking work there starves.
    @discardableResult
    public func addPersistentStore(
        type: PersistentStore.StoreType = .sqlite, configuration: String? = nil, at url: URL?,
        options: [String: any Sendable]? = nil
    ) async throws -> PersistentStore {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue(label: "RecordStore.PersistentStoreCoordinator.add").async {
                continuation.resume(
                    with: Result { () throws(RecordStoreError) -> PersistentStore in
                        try self.addPersistentStore(type: type, configuration: configuration, at: url, options: options)
                    })
            }
        }
    }

    private func scheduleImport() {
        importQueue.async { [weak self] in
            guard let self else { return }
            do {
                self.replaceStoresWhoseContentWasRemoved()
                try self.importBatches()
            } catch {
                self.logger.error("importing other devices' changes failed: \(error)")
            }
        }
    }

    /// Imports every log of another device not applied yet, and posts what changed.
    ///
    /// Logs are applied in one transaction per store, or in several for an import changing more than
    /// ``importBatchLimit`` objects, each posted in a ``didImportUbiquitousContentChangesNotification`` of its own
    /// as it commits (as Core Data posts one per batch of logs). A log that cannot be read (truncated, altered,
    /// naming what the model lacks) is skipped, logged and tried again at the next import; the others are applied.
    /// A log of a newer model is kept for after the upgrade.
    /// - Returns: What the whole import changed.
    @discardableResult
    public func importUbiquitousContent() throws(RecordStoreError) -> ObjectIDChanges {
        var total = MergeChanges()
        try importBatches { total.append($0) }
        return ObjectIDChanges(total)
    }

    /// Imports as ``importUbiquitousContent()`` does, handing each posted batch to `posted` instead of keeping them.
    func importBatches(_ posted: (MergeChanges) -> Void = { _ in }) throws(RecordStoreError) {
        var first = true
        var more = true
        while more {
            more = false
            var batch = MergeChanges()
            var finished: [PersistentStore] = []
            coordinatorLock.lock()
            do {
                defer { coordinatorLock.unlock() }
                // A store of an account signed out meanwhile reads nothing: the container holds another's content.
                for store in persistentStores where store.belongsToSignedInAccount {
                    guard let folder = store.ubiquitousContentFolder else { continue }
                    let report = try LogImport.run(
                        store: store, folder: folder, baselines: first, limit: importBatchLimit)
                    for problem in report.problems { logger.warning("\(problem)") }
                    batch.append(report.changes)
                    if report.more { more = true } else { finished.append(store) }
                }
            }
            first = false
            if !batch.isEmpty {
                let changes = ObjectIDChanges(batch)
                imports.send(changes)
                NotificationCenter.default.post(
                    name: Self.didImportUbiquitousContentChangesNotification, object: self, userInfo: changes.userInfo)
            }
            // The progress and any baseline are written once the app has heard: they are not what it waits for.
            for store in finished {
                coordinatorLock.lock()
                defer { coordinatorLock.unlock() }
                guard persistentStores.contains(where: { $0 === store }) else { continue }
                do {
                    try store.compact()
                } catch {
                    logger.error("the store's progress or baseline could not be written: \(error)")
                }
            }
            guard !batch.isEmpty else { continue }
            posted(batch)
        }
    }
}

/// Presents a store's content folder to learn of logs other devices' engines put there; the store's own logs,
/// which it never imports, start no import.
private final class ContentWatcher: FilePresenter, @unchecked Sendable {
    let presentedItemURL: URL?
    let presentedItemOperationQueue: OperationQueue
    private let ownPrefix: String?
    private let changed: @Sendable () -> Void

    init(folder: URL, own: URL?, changed: @escaping @Sendable () -> Void) {
        presentedItemURL = folder
        presentedItemOperationQueue = OperationQueue()
        presentedItemOperationQueue.maxConcurrentOperationCount = 1
        ownPrefix = own.map { $0.standardizedFileURL.path + "/" }
        self.changed = changed
    }

    private func isOwn(_ url: URL) -> Bool {
        guard let ownPrefix else { return false }
        return url.standardizedFileURL.path.hasPrefix(ownPrefix)
    }

    private func changed(at urls: URL...) {
        if urls.allSatisfy(isOwn) { return }
        changed()
    }

    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        changed()
        completionHandler(nil)
    }
    func presentedItemDidMove(to newURL: URL) { changed() }
    func presentedSubitemDidAppear(at url: URL) { changed(at: url) }
    func presentedSubitemDidChange(at url: URL) { changed(at: url) }
    func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) { changed(at: oldURL, newURL) }
    func presentedItemDidChange() { changed() }
}
