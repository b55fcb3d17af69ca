import Foundation
import Logging
import SyncEngine
import Synchronization
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@testable import RecordStore

/// A store in a signed-in container belongs to the account: signing another account in, signing out and signing
/// back in switch the coordinator's store, each account's kept apart and none deleted, with the app told before and
/// after, as Core Data's ubiquitous stores do.
@Suite("Record store account transitions", .timeLimit(.minutes(5)))
struct AccountTransitionTests {
    @Test("the content removed from the container: an empty store takes the store's place, its file kept aside")
    func removedContentGetsANewStore() async throws {
        try await withAccounts { ubiquity, _, _, folder in
            let container = try #require(try await ubiquity.containerURL(forIdentifier: nil))
            let content = container.appendingPathComponent("grocery_data", isDirectory: true)
            let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModel.model)
            let recorder = TransitionRecorder(coordinator)
            let first = try await coordinator.addPersistentStore(
                type: .sqlite, configuration: nil, at: folder.appendingPathComponent("documents/Grocery.sqlite"),
                options: [
                    NSPersistentStoreUbiquitousContentNameKey: "Grocery",
                    NSPersistentStoreUbiquitousContentURLKey: content,
                ])
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try context.performAndWait {
                Item(context: context).title = "Milk"
                try context.saveWritingLogs()
            }

            // Removed by hand here (another device's removal reaches this one the same way, by its engine).
            // The store may be writing its progress there meanwhile: remove until nothing is left.
            let removed = content.appendingPathComponent("Grocery", isDirectory: true)
            var attempts = 0
            while FileManager.default.fileExists(atPath: removed.path), attempts < 1_000 {
                try? FileManager.default.removeItem(at: removed)
                attempts += 1
            }
            #expect(attempts < 1_000, "the content folder could be removed")
            let will = try await recorder.next { $0.phase == .willChange && $0.type == .contentRemoved }
            #expect(will.removed.first === first)
            let did = try await recorder.next { $0.phase == .didChange && $0.type == .contentRemoved }
            let second = try #require(did.added.first)
            #expect(coordinator.persistentStores.first === second && second.identifier != first.identifier)
            context.reset()
            let left = try context.performAndWait { try context.all(Item.self, sortedBy: \.title).count }
            #expect(left == 0, "the new store is empty")
            try context.performAndWait {
                Item(context: context).title = "Bread"
                try context.saveWritingLogs()
            }
            #expect(try logFolders(in: content) == [second.identifier], "the new store's logs start afresh")
            // The old store's file is kept, with what it held.
            let setAside = folder.appendingPathComponent(
                "documents/CoreDataUbiquitySupport/\(try #require(ubiquity.identityToken).value)/Removed")
            let aside = try FileManager.default.contentsOfDirectory(atPath: setAside.path)
            #expect(aside.count == 1)
            let kept = try StoreFixture(
                in: setAside.appendingPathComponent(try #require(aside.first)), name: "Grocery")
            let reader = kept.context()
            #expect(
                try withExtendedLifetime(reader) { try reader.all(Item.self, sortedBy: \.title).map(\.title) } == [
                    "Milk"
                ])
        }
    }

    @Test("another account, signed out, the first account again: each its own store, the app told before and after")
    func accountsKeepTheirOwnStores() async throws {
        try await withAccounts { ubiquity, ada, bob, folder in
            try await switchAccounts(ubiquity, ada: ada, bob: bob, folder: folder)
        }
    }

    /// Runs `body` with a UbiquityKit instance signed in as Ada (Bob's profile ready too) on a service on loopback.
    private func withAccounts(
        _ body: (Ubiquity, _ ada: DeviceProfile, _ bob: DeviceProfile, URL) async throws -> Void
    ) async throws {
        try await withTemporaryFolder { folder in
            let service = try await LocalService.start(in: folder.appendingPathComponent("service"))
            func profile(_ account: String) async throws -> DeviceProfile {
                let client = try await service.signIn(account: account, device: "laptop")
                return DeviceProfile(
                    server: service.baseURL, account: account, token: client.token ?? "",
                    device: SavingDevice(id: DeviceID(), name: "laptop"))
            }
            let ada = try await profile("ada")
            let bob = try await profile("bob")
            var logger = Logger(label: "ubiquity.transitions")
            logger.logLevel = .critical
            let ubiquity = Ubiquity(
                configuration: UbiquityConfiguration(
                    root: folder.appendingPathComponent("root", isDirectory: true),
                    containers: [try ContainerID("TEAM.com.example.grocery")], profile: ada, engine: .embedded,
                    pollInterval: .seconds(5), requestTimeout: .seconds(30), logger: logger,
                    containerFolders: ContainerFolderRegister(folder: folder.appendingPathComponent("register"))))
            do {
                try await body(ubiquity, ada, bob, folder)
            } catch {
                await ubiquity.shutdown()
                await service.stop()
                throw error
            }
            await ubiquity.shutdown()
            await service.stop()
        }
    }

    private func switchAccounts(_ ubiquity: Ubiquity, ada: DeviceProfile, bob: DeviceProfile, folder: URL)
        async throws
    {
        do {
            let container = try #require(try await ubiquity.containerURL(forIdentifier: nil))
            let content = container.appendingPathComponent("grocery_data", isDirectory: true)
            let storeURL = folder.appendingPathComponent("documents/Grocery.sqlite")

            let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModel.model)
            let recorder = TransitionRecorder(coordinator)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            // Apple's advice, followed by the app: save and reset before the stores change.
            let saver = NotificationCenter.default.addObserver(
                forName: PersistentStoreCoordinator.storesWillChangeNotification, object: coordinator, queue: nil
            ) { _ in
                context.performAndWait {
                    try? context.saveWritingLogs()
                    context.reset()
                }
            }
            defer { NotificationCenter.default.removeObserver(saver) }

            try await coordinator.addPersistentStore(
                type: .sqlite, configuration: nil, at: storeURL,
                options: [
                    NSPersistentStoreUbiquitousContentNameKey: "Grocery",
                    NSPersistentStoreUbiquitousContentURLKey: content,
                ])
            let adaStore = try #require(coordinator.persistentStores.first)
            try await recorder.next { $0.type == .initialImportCompleted && $0.added.first === adaStore }
            func titles() throws -> [String] {
                try context.performAndWait { try context.all(Item.self, sortedBy: \.title).map(\.title) }
            }
            func insert(_ title: String, save: Bool = true) throws {
                try context.performAndWait {
                    Item(context: context).title = title
                    if save { try context.saveWritingLogs() }
                }
            }
            try insert("Ada's milk")
            // Unsaved when the account changes: the app's will-change observer saves it into Ada's store.
            try insert("Ada's eggs", save: false)

            await ubiquity.signIn(bob)
            let toBob = try await recorder.next { $0.phase == .didChange && $0.type == .accountAdded }
            let willToBob = try #require(recorder.seen.first { $0.phase == .willChange && $0.type == .accountAdded })
            #expect(willToBob.removed.first === adaStore && willToBob.added.isEmpty)
            #expect(toBob.removed.first === adaStore)
            let bobStore = try #require(toBob.added.first)
            #expect(coordinator.persistentStores.first === bobStore)
            #expect(try titles() == [], "Bob's store holds nothing of Ada's")
            try insert("Bob's bread")
            #expect(try logFolders(in: content) == [bobStore.identifier], "only Bob's logs in Bob's container")

            await ubiquity.signOut()
            let signedOut = try await recorder.next { $0.phase == .didChange && $0.type == .accountRemoved }
            let localStore = try #require(signedOut.added.first)
            #expect(signedOut.removed.first === bobStore && localStore.ubiquitousContentFolder == nil)
            #expect(try titles() == [])
            try insert("Offline tea")

            await ubiquity.signIn(ada)
            let back = try await recorder.next { $0.phase == .didChange && $0.type == .accountAdded }
            #expect(back.removed.first === localStore)
            let adaAgain = try #require(back.added.first)
            #expect(adaAgain.identifier == adaStore.identifier, "Ada's own store, as she left it")
            #expect(try titles() == ["Ada's eggs", "Ada's milk"])
            #expect(try logFolders(in: content) == [adaStore.identifier], "Ada's container holds Ada's logs")
            // Nothing was deleted: each account's store is still on disk with what it held.
            for (store, title) in [(bobStore, "Bob's bread"), (localStore, "Offline tea")] {
                let url = try #require(store.url)
                let other = try StoreFixture(
                    in: url.deletingLastPathComponent(), name: url.deletingPathExtension().lastPathComponent)
                let reader = other.context()
                let kept = try withExtendedLifetime(reader) {
                    try reader.all(Item.self, sortedBy: \.title).map(\.title)
                }
                #expect(kept == [title])
            }
        }
    }
}

/// The device folders of a content folder: one per store that wrote logs there.
private func logFolders(in content: URL) throws -> [String] {
    let grocery = content.appendingPathComponent("Grocery", isDirectory: true)
    return try FileManager.default.contentsOfDirectory(atPath: grocery.path).filter { !$0.hasPrefix(".") }.sorted()
}

/// Every transition a coordinator reports, recorded as it comes.
final class TransitionRecorder: Sendable {
    private final class Box: Sendable {
        /// Not yet consumed by ``TransitionRecorder/next(sourceLocation:where:)``.
        let waiting = Mutex<[StoreTransition]>([])
        let all = Mutex<[StoreTransition]>([])
    }
    private let box = Box()
    private let task: Task<Void, Never>

    init(_ coordinator: PersistentStoreCoordinator) {
        let stream = coordinator.storeTransitions()
        let box = box
        task = Task {
            for await transition in stream {
                box.waiting.withLock { $0.append(transition) }
                box.all.withLock { $0.append(transition) }
            }
        }
    }

    deinit { task.cancel() }

    /// Every transition so far.
    var seen: [StoreTransition] { box.all.withLock { $0 } }

    /// Waits (up to a minute) for a transition satisfying `condition`, consuming it and those before it.
    @discardableResult
    func next(
        sourceLocation: SourceLocation = #_sourceLocation,
        where condition: @escaping @Sendable (StoreTransition) -> Bool
    ) async throws -> StoreTransition {
        var found: StoreTransition?
        let arrived = await eventually {
            found = box.waiting.withLock { waiting in
                guard let index = waiting.firstIndex(where: condition) else { return nil }
                defer { waiting.removeSubrange(...index) }
                return waiting[index]
            }
            return found != nil
        }
        #expect(arrived, "no such transition within a minute", sourceLocation: sourceLocation)
        return try #require(found, sourceLocation: sourceLocation)
    }
}
