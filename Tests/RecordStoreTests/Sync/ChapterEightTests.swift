import Foundation
import Logging
import SyncEngine
import Synchronization
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@testable import RecordStore

/// *iCloud for Developers*, chapter 8, ported line by line: the book's `SMAppDelegate` (a coordinator whose store is
/// added with the ubiquitous options off the main thread, a main-queue context merging each did-import notification
/// as the book does, deletions excluded) and its master view controller (a fetched results controller reloaded when
/// the store is ready), run on two devices whose engines sync one container through a service on loopback.
@Suite("The book's chapter 8 on two devices and a service", .timeLimit(.minutes(5)))
struct ChapterEightTests {
    @Test(
        "items and tags saved on the laptop reach the desktop's table with a did-import naming their ids; edits go back"
    )
    @MainActor
    func itemsAndTagsReachTheOtherDevice() async throws {
        try await withTwoBookDevices { laptop, desktop in
            let imports = ImportRecorder(desktop.delegate.persistentStoreCoordinator)
            let moc = laptop.delegate.managedObjectContext
            let milk = Item(context: moc)
            milk.title = "Milk"
            let eggs = Item(context: moc)
            eggs.title = "Eggs"
            let dairy = Tag(context: moc)
            dairy.name = "Dairy"
            let weekly = Tag(context: moc)
            weekly.name = "Weekly"
            milk.tags = [dairy, weekly]
            eggs.tags = [dairy]
            try moc.save()
            let saved: Set = [milk.objectID, eggs.objectID, dairy.objectID, weekly.objectID]

            // The laptop's engine sends the log up, the desktop's brings it down, its coordinator imports it.
            let imported = try await imports.next { !$0.inserted.isDisjoint(with: saved) }
            #expect(imported.inserted == saved, "one import, naming every object the save inserted")
            #expect(imported.updated.isEmpty && imported.deleted.isEmpty)

            // The book's merge brought them into the desktop's context, and its table shows them.
            await desktop.controller.waitForRows(["Eggs", "Milk"])
            let milkOnDesktop = try #require(desktop.controller.items.first { $0.title == "Milk" })
            #expect(Set(milkOnDesktop.tags.map(\.name)) == ["Dairy", "Weekly"])

            // An edit on the desktop goes back the same way.
            let back = ImportRecorder(laptop.delegate.persistentStoreCoordinator)
            milkOnDesktop.title = "Whole milk"
            try desktop.delegate.managedObjectContext.save()
            let milkID = milk.objectID
            try await back.next { $0.updated.contains(milkID) }
            await laptop.controller.waitForRows(["Eggs", "Whole milk"])
        }
    }

    @Test("a title edited on one device and the tags on the other: both kept on both, with the same stores")
    @MainActor
    func concurrentEditsOfDifferentPropertiesMerge() async throws {
        try await withTwoBookDevices { laptop, desktop in
            let toDesktop = ImportRecorder(desktop.delegate.persistentStoreCoordinator)
            let onLaptop = laptop.delegate.managedObjectContext
            let bread = Item(context: onLaptop)
            bread.title = "Bread"
            try onLaptop.save()
            let id = bread.objectID
            try await toDesktop.next { $0.inserted.contains(id) }
            await desktop.controller.waitForRows(["Bread"])

            // Both edit before either hears of the other.
            let toLaptop = ImportRecorder(laptop.delegate.persistentStoreCoordinator)
            bread.title = "Rye bread"
            let onDesktop = desktop.delegate.managedObjectContext
            let breadOnDesktop = try #require(desktop.controller.items.first)
            let bakery = Tag(context: onDesktop)
            bakery.name = "Bakery"
            breadOnDesktop.tags = [bakery]
            try onLaptop.save()
            try onDesktop.save()
            let bakeryID = bakery.objectID
            try await toLaptop.next { $0.updated.contains(id) || $0.inserted.contains(bakeryID) }
            try await toDesktop.next { $0.updated.contains(id) }

            for device in [laptop, desktop] {
                await device.controller.waitForRows(["Rye bread"])
                let item = try #require(device.controller.items.first)
                #expect(item.tags.map(\.name) == ["Bakery"], "\(device.name) kept the other device's tags")
            }
            let laptopState = try laptop.delegate.store().database.read { try $0.replicaState() }
            let desktopState = try desktop.delegate.store().database.read { try $0.replicaState() }
            #expect(laptopState == desktopState, "every record and link the same on both")
        }
    }
}

// MARK: The book's classes

/// The book's `SMAppDelegate`: model, coordinator and context, made when first asked for.
@MainActor
final class BookAppDelegate {
    /// The notification the book posts once the store is added.
    static let groceryItemsSynchronized = Notification.Name("com.studiomagnolia.groceryItemsSynchronized")

    let ubiquity: Ubiquity
    /// `applicationDocumentsDirectory`: where the store's file lives, outside the container.
    let applicationDocumentsDirectory: URL
    private var _persistentStoreCoordinator: PersistentStoreCoordinator?
    private var _managedObjectContext: ManagedObjectContext?
    private var observers: [any NSObjectProtocol] = []

    init(ubiquity: Ubiquity, documents: URL) {
        self.ubiquity = ubiquity
        applicationDocumentsDirectory = documents
    }

    var managedObjectModel: ManagedObjectModel { TestModel.model }

    var persistentStoreCoordinator: PersistentStoreCoordinator {
        if let _persistentStoreCoordinator {
            return _persistentStoreCoordinator
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: managedObjectModel)
        _persistentStoreCoordinator = coordinator
        let storePath = applicationDocumentsDirectory.appendingPathComponent("Grocery.sqlite").path
        let psc = coordinator
        let ubiquity = ubiquity
        // dispatch_async(dispatch_get_global_queue(…), ^{ … }): adding the store waits for the container and imports
        // what is there, off the main thread.
        Task.detached {
            let storeUrl = URL(fileURLWithPath: storePath)
            // building the path to store transaction logs
            guard var transactionLogsURL = try? await ubiquity.containerURL(forIdentifier: nil) else {
                print("no ubiquity container: signed out")
                return
            }
            let coreDataCloudContent = transactionLogsURL.path + "/grocery_data"
            transactionLogsURL = URL(fileURLWithPath: coreDataCloudContent)
            // Building the options array for the coordinator
            let options: [String: any Sendable] = [
                NSPersistentStoreUbiquitousContentNameKey: "com.studiomagnolia.coredata.grocery",
                NSPersistentStoreUbiquitousContentURLKey: transactionLogsURL,
                NSMigratePersistentStoresAutomaticallyOption: true,
            ]
            Self.addStore(to: psc, at: storeUrl, options: options)
            // post a notification to tell the main thread to refresh the user interface
            await MainActor.run {
                print("persistent store added")
                NotificationCenter.default.post(name: Self.groceryItemsSynchronized, object: nil, userInfo: nil)
            }
        }
        return coordinator
    }

    /// The store's registration, under the coordinator's lock, as the book writes it.
    nonisolated private static func addStore(
        to psc: PersistentStoreCoordinator, at storeUrl: URL, options: [String: any Sendable]
    ) {
        psc.lock()
        do {
            try psc.addPersistentStore(type: .sqlite, configuration: nil, at: storeUrl, options: options)
        } catch {
            print("Core data error \(error)")
        }
        psc.unlock()
    }

    var managedObjectContext: ManagedObjectContext {
        if let _managedObjectContext {
            return _managedObjectContext
        }
        let coordinator = persistentStoreCoordinator
        // choose a concurrency type for the context
        let moc = ManagedObjectContext(concurrencyType: .mainQueue)
        moc.performAndWait {
            // configure context properties
            moc.persistentStoreCoordinator = coordinator
            observers.append(
                NotificationCenter.default.addObserver(
                    forName: PersistentStoreCoordinator.didImportUbiquitousContentChangesNotification,
                    object: coordinator, queue: nil
                ) { notification in
                    Self.mergeChangesFromiCloud(notification, into: moc)
                })
        }
        _managedObjectContext = moc
        return moc
    }

    /// The book's `mergeChangesFromiCloud:`, deletions excluded. It runs on the thread that posted the notification
    /// and hands the merge to the context's queue.
    nonisolated static func mergeChangesFromiCloud(_ notification: Notification, into moc: ManagedObjectContext) {
        let noteInfo = ObjectIDChanges(userInfo: notification.userInfo)
        let name = notification.name
        moc.perform {
            var mergingPolicyResult: [AnyHashable: Any] = [:]
            mergingPolicyResult[NSInsertedObjectsKey] = noteInfo.inserted
            mergingPolicyResult[NSUpdatedObjectsKey] = noteInfo.updated
            mergingPolicyResult[NSDeletedObjectsKey] = Set<ManagedObjectID>()  // Exclude deletions
            let saveNotification = Notification(name: name, object: nil, userInfo: mergingPolicyResult)
            moc.mergeChanges(fromContextDidSave: saveNotification)
            moc.processPendingChanges()
        }
    }

    /// The store, once added.
    func store() throws -> PersistentStore {
        try #require(persistentStoreCoordinator.persistentStores.first)
    }

    func close() {
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
        observers = []
    }
}

/// The book's `SMMasterViewController`: a table of items from a fetched results controller, reloaded when the store
/// is ready and kept up to date by the controller's delegate.
@MainActor
final class BookMasterViewController: FetchedResultsControllerDelegate {
    let delegate: BookAppDelegate
    private(set) var rows: [String] = []
    private var observer: (any NSObjectProtocol)?
    private var _fetchedResultsController: FetchedResultsController<Item>?
    private let reloads = Mutex(0)

    init(delegate: BookAppDelegate) {
        self.delegate = delegate
        // viewDidLoad: reload once the store is added.
        observer = NotificationCenter.default.addObserver(
            forName: BookAppDelegate.groceryItemsSynchronized, object: nil, queue: nil
        ) { [weak self] _ in
            MainActor.assumeIsolated { self?.reloadItems() }
        }
    }

    var fetchedResultsController: FetchedResultsController<Item> {
        if let _fetchedResultsController { return _fetchedResultsController }
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest<Item>(sortDescriptors: [SortDescriptor(\Item.title)]),
            managedObjectContext: delegate.managedObjectContext, sectionNameKeyPath: nil, cacheName: "Master")
        controller.delegate = self
        _fetchedResultsController = controller
        return controller
    }

    func reloadItems() {
        print("============ reloading items")
        do {
            try fetchedResultsController.performFetch()
            reloadData()
        } catch {
            print("Core data error \(error)")
        }
        reloads.withLock { $0 += 1 }
    }

    /// Whether the store has been added and the table loaded once.
    var isLoaded: Bool { reloads.withLock { $0 > 0 } }

    /// The items the table shows.
    var items: [Item] { fetchedResultsController.fetchedObjects ?? [] }

    private func reloadData() { rows = items.map(\.title) }

    nonisolated func controllerDidChangeContent(_ controller: FetchedResultsController<Item>) {
        MainActor.assumeIsolated { reloadData() }
    }

    /// Waits until the table shows `titles`; fails the test after a minute without.
    func waitForRows(_ titles: [String], sourceLocation: SourceLocation = #_sourceLocation) async {
        let shown = await eventually { self.rows == titles }
        #expect(shown, "the table shows \(rows), not \(titles)", sourceLocation: sourceLocation)
    }

    func close() {
        if let observer { NotificationCenter.default.removeObserver(observer) }
        observer = nil
    }
}

// MARK: Two devices

/// One device of the book's app: its UbiquityKit (the engine embedded), app delegate and table.
@MainActor
final class BookDevice {
    let name: String
    let ubiquity: Ubiquity
    let delegate: BookAppDelegate
    let controller: BookMasterViewController

    init(_ name: String, service: LocalService, folder: URL) async throws {
        self.name = name
        let client = try await service.signIn(account: "ada", device: name)
        let profile = DeviceProfile(
            server: service.baseURL, account: "ada", token: client.token ?? "",
            device: SavingDevice(id: DeviceID(), name: name))
        var logger = Logger(label: "ubiquity.chapter8.\(name)")
        logger.logLevel = .critical
        ubiquity = Ubiquity(
            configuration: UbiquityConfiguration(
                // Short: the engine's socket lives under the root, and a socket's path has at most 107 bytes.
                root: folder.appendingPathComponent(name, isDirectory: true),
                containers: [try ContainerID("TEAM.com.example.grocery")], profile: profile,
                engine: .embedded, pollInterval: .seconds(5), requestTimeout: .seconds(30), logger: logger,
                containerFolders: ContainerFolderRegister(folder: folder.appendingPathComponent("\(name)-register"))))
        let documents = folder.appendingPathComponent("\(name)-documents", isDirectory: true)
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        delegate = BookAppDelegate(ubiquity: ubiquity, documents: documents)
        controller = BookMasterViewController(delegate: delegate)
        // application:didFinishLaunchingWithOptions: asks for the context, which starts adding the store.
        _ = delegate.managedObjectContext
        let loaded = await eventually { self.controller.isLoaded }
        try #require(loaded, "\(name)'s store was added and its table loaded")
    }

    func close() async {
        controller.close()
        delegate.close()
        await ubiquity.shutdown()
    }
}

/// Runs `body` with the book's app on a laptop and a desktop of one account, synced through a service on loopback.
@MainActor
func withTwoBookDevices(_ body: (BookDevice, BookDevice) async throws -> Void) async throws {
    try await withTemporaryFolder { folder in
        let service = try await LocalService.start(in: folder.appendingPathComponent("service"))
        var devices: [BookDevice] = []
        do {
            devices.append(try await BookDevice("laptop", service: service, folder: folder))
            devices.append(try await BookDevice("desktop", service: service, folder: folder))
            try await body(devices[0], devices[1])
        } catch {
            for device in devices { await device.close() }
            await service.stop()
            throw error
        }
        for device in devices { await device.close() }
        await service.stop()
    }
}
