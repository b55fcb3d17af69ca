import Foundation
import RecordStore

/// The device's store of tags, set up as the book sets up its Core Data stack for iCloud: a SQLite file of this
/// device's own, outside the container, added with the ubiquitous options, so that each save goes into the container
/// as a transaction log (which the engine syncs like any file) and the other devices' logs are imported.
final class GroceryTagStore: Sendable {
    /// The store's name among the container's content (the book's `NSPersistentStoreUbiquitousContentNameKey`).
    static let contentName = "com.example.grocery"
    /// The container's folder of the store's logs, as the book names it.
    static let contentFolderName = "grocery_data"
    /// The store's file name, in the app's folder beside the device's containers.
    static let fileName = "Grocery.sqlite"

    let coordinator: PersistentStoreCoordinator

    private init(coordinator: PersistentStoreCoordinator) {
        self.coordinator = coordinator
    }

    /// Opens (or creates) the store at `file`, its logs under `container/grocery_data`, and imports the logs other
    /// devices left there. Runs off the caller's thread, as the book adds its store.
    static func open(file: URL, container: URL) async throws(GroceryError) -> GroceryTagStore {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: GroceryTagModel.model)
        let options: [String: any Sendable] = [
            NSPersistentStoreUbiquitousContentNameKey: contentName,
            NSPersistentStoreUbiquitousContentURLKey: contentFolder(in: container),
            NSMigratePersistentStoresAutomaticallyOption: true,
        ]
        do {
            try await coordinator.addPersistentStore(type: .sqlite, configuration: nil, at: file, options: options)
        } catch {
            throw GroceryError(.storeFailed, "the tag store at \(file.path) could not be opened: \(error)")
        }
        return GroceryTagStore(coordinator: coordinator)
    }

    /// The folder of the store's logs in `container`.
    static func contentFolder(in container: URL) -> URL {
        container.appendingPathComponent(contentFolderName, isDirectory: true)
    }

    /// Applies the logs other devices' stores wrote that a sync has brought since the last import.
    func importChanges() async throws(GroceryError) {
        let coordinator = coordinator
        do {
            // Reading and applying logs is disk work: off the caller's thread.
            try await Task.detached { _ = try coordinator.importUbiquitousContent() }.value
        } catch {
            throw GroceryError(.storeFailed, "the other devices' tags could not be imported: \(error)")
        }
    }

    /// A new context on the store, for one read or one change. A keyed object another device made meanwhile (the
    /// same tag, say) is merged into this context's one at save rather than refused, this context's changes on top.
    @MainActor
    func makeContext() -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        context.mergePolicy = .mergeByPropertyObjectTrump
        return context
    }
}
