import Foundation
import RecordStore

/// A coordinator with one SQLite store in a folder, and contexts on it.
struct StoreFixture {
    let coordinator: PersistentStoreCoordinator
    let store: PersistentStore

    /// A store at `folder/name.sqlite`; with `content`, a ubiquitous store whose logs go to `content/Grocery/`.
    /// With `baselineThreshold`, a baseline is written after that many saves; `options` are added to the store's.
    init(
        in folder: URL, name: String = "store", content: URL? = nil, model: ManagedObjectModel = TestModel.model,
        baselineThreshold: Int? = nil, options extra: [String: any Sendable] = [:]
    ) throws {
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        var options: [String: any Sendable] = [NSMigratePersistentStoresAutomaticallyOption: true]
        options.merge(extra) { _, new in new }
        if let content {
            options[NSPersistentStoreUbiquitousContentNameKey] = "Grocery"
            options[NSPersistentStoreUbiquitousContentURLKey] = content
        }
        if let baselineThreshold { options[RecordStoreBaselineThresholdOption] = baselineThreshold }
        store = try coordinator.addPersistentStore(
            type: .sqlite, configuration: nil, at: folder.appendingPathComponent("\(name).sqlite"), options: options)
    }

    /// A new private-queue context on the coordinator.
    func context(_ policy: MergePolicy = .error) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        context.mergePolicy = policy
        return context
    }
}

extension ManagedObjectContext {
    /// Saves, then waits until the logs of the save are in the container (saves write their logs after they return),
    /// for a test that looks at the container's files or has another device import next.
    func saveWritingLogs() throws {
        try save()
        for store in persistentStoreCoordinator?.persistentStores ?? [] { store.waitUntilLogsWritten() }
    }

    /// Every object of `type`, by title or name.
    func all<T: ManagedObject>(_ type: T.Type, sortedBy key: KeyPath<T, String> & Sendable) throws -> [T] {
        try fetch(FetchRequest<T>(sortDescriptors: [SortDescriptor(key)]))
    }
}
