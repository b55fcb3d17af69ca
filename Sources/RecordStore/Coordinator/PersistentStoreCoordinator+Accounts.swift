import Foundation
import UbiquityKit

/// Where a store kept in a signed-in container lives for each account, and how to open it.
///
/// A store whose content URL lies in a container of a ``UbiquityKit/Ubiquity`` instance belongs to the account
/// signed in: its file is `<folder of url>/CoreDataUbiquitySupport/<account>/<file name>`, one per account, and
/// `…/local/<file name>` while signed out (a store whose saves write no logs). Switching accounts switches files;
/// none is ever deleted, so signing back in finds the account's store as it was.
struct AccountBinding: Sendable {
    let ubiquity: Ubiquity
    /// The container holding the content.
    let container: String
    /// The URL the app gave.
    let url: URL
    /// The options the app gave.
    let options: [String: any Sendable]

    /// The binding of a store added at `url` with `options`, when its content URL is in a container of a UbiquityKit
    /// instance; `nil` for any other store.
    init?(url: URL, options: [String: any Sendable]) {
        guard let content = options[NSPersistentStoreUbiquitousContentURLKey] as? URL,
            let ubiquity = Ubiquity.owning(content)
        else { return nil }
        let root = ubiquity.configuration.root.standardizedFileURL.pathComponents
        let path = content.standardizedFileURL.pathComponents
        guard path.count > root.count, Array(path.prefix(root.count)) == root else { return nil }
        let container = path[root.count]
        guard ubiquity.configuration.containers.contains(where: { $0.string == container }) else { return nil }
        self.ubiquity = ubiquity
        self.container = container
        self.url = url
        self.options = options
    }

    /// The file of `account`'s store.
    func storeURL(for account: UbiquityIdentityToken?) -> URL {
        url.deletingLastPathComponent()
            .appendingPathComponent("CoreDataUbiquitySupport", isDirectory: true)
            .appendingPathComponent(account?.value ?? "local", isDirectory: true)
            .appendingPathComponent(url.lastPathComponent)
    }

    /// Opens `account`'s store: with the app's ubiquitous options while signed in, without them while signed out.
    func openStore(for account: UbiquityIdentityToken?, model: ManagedObjectModel) throws(RecordStoreError)
        -> PersistentStore
    {
        var options = options
        if account == nil {
            options[NSPersistentStoreUbiquitousContentNameKey] = nil
            options[NSPersistentStoreUbiquitousContentURLKey] = nil
        }
        return try PersistentStore(
            type: .sqlite, url: storeURL(for: account), options: options, model: model, binding: self,
            account: account)
    }
}

extension PersistentStoreCoordinator {
    /// Every store transition from now on (each as it will happen and as it did), for as long as the stream is
    /// iterated: the async form of ``storesWillChangeNotification`` and ``storesDidChangeNotification``. The
    /// will-change step is yielded before the stores change but, unlike the notification, not waited for.
    public func storeTransitions() -> AsyncStream<StoreTransition> { transitionBroadcast.stream() }

    /// Follows `ubiquity`'s signed-in account, once.
    func follow(_ ubiquity: Ubiquity) {
        followingTask.withLock { task in
            guard task == nil else { return }
            let changes = ubiquity.identityChanges()
            task = Task.detached { [weak self] in
                for await account in changes {
                    guard let self else { return }
                    await self.switchStores(to: account)
                }
            }
        }
    }

    /// Replaces every store of another account by `account`'s (or the local one when signed out), telling the app
    /// before and after.
    func switchStores(to account: UbiquityIdentityToken?) async {
        let leaving = persistentStores.filter { $0.binding != nil && $0.account != account }
        guard !leaving.isEmpty else { return }
        if account != nil {
            // The new account's folder is claimed (the old one's set aside) before its store reads it.
            for binding in leaving.compactMap(\.binding) {
                _ = try? await binding.ubiquity.containerURL(forIdentifier: binding.container)
            }
        }
        let type: PersistentStoreUbiquitousTransitionType = account == nil ? .accountRemoved : .accountAdded
        post(StoreTransition(phase: .willChange, type: type, added: [], removed: leaving))
        var added: [PersistentStore] = []
        lock()
        // Checked again under the lock: another switch may have replaced a store meanwhile.
        for old in leaving where persistentStores.contains(where: { $0 === old }) {
            guard let binding = old.binding else { continue }
            do {
                let new = try binding.openStore(for: account, model: managedObjectModel)
                replace(old, with: new)
                try attach(new)
                added.append(new)
            } catch {
                logger.error("the store of the account signed in could not be opened: \(error)")
                replace(old, with: nil)
            }
        }
        unlock()
        post(StoreTransition(phase: .didChange, type: type, added: added, removed: leaving))
    }

    /// Brings down what the container holds for `store` and imports it; the first time it is done for the store,
    /// tells the app the initial import completed.
    func completeInitialImport(of store: PersistentStore) {
        guard let binding = store.binding, store.ubiquitousContentFolder != nil else { return }
        Task.detached { [weak self] in
            do {
                try await binding.ubiquity.synchronize(containerIdentifier: binding.container)
            } catch {
                // Offline: the logs come with the engine's next rounds, and are imported as they appear.
                return
            }
            guard let self, self.persistentStores.contains(where: { $0 === store }) else { return }
            do {
                try self.importBatches()
                let first = try store.database.write { access in
                    guard try access.meta(Self.initialImportKey) == nil else { return false }
                    try access.setMeta(Self.initialImportKey, 1)
                    return true
                }
                if first {
                    self.post(
                        StoreTransition(phase: .didChange, type: .initialImportCompleted, added: [store], removed: []))
                }
            } catch {
                self.logger.error("the initial import failed: \(error)")
            }
        }
    }

    private static var initialImportKey: String { "initialImportCompleted" }

    /// Replaces each store of the account signed in whose content folder is gone from the container (removed on
    /// another device, or by hand) by an empty one, telling the app before and after. The store's file is kept,
    /// moved to `Removed/<date>/` beside it.
    func replaceStoresWhoseContentWasRemoved() {
        func removed(_ store: PersistentStore) -> Bool {
            guard store.binding != nil, store.belongsToSignedInAccount, let folder = store.ubiquitousContentFolder
            else { return false }
            return !FileManager.default.fileExists(atPath: folder.path)
        }
        let gone = persistentStores.filter(removed)
        guard !gone.isEmpty else { return }
        post(StoreTransition(phase: .willChange, type: .contentRemoved, added: [], removed: gone))
        var added: [PersistentStore] = []
        lock()
        // Checked again under the lock: the account may have changed meanwhile.
        for old in gone where persistentStores.contains(where: { $0 === old }) && removed(old) {
            guard let binding = old.binding, let url = old.url else { continue }
            do {
                try old.database.close()
                try Self.setAside(url)
                let new = try binding.openStore(for: old.account, model: managedObjectModel)
                replace(old, with: new)
                try attach(new)
                added.append(new)
            } catch {
                logger.error("the store whose content was removed could not be replaced: \(error)")
                replace(old, with: nil)
            }
        }
        unlock()
        post(StoreTransition(phase: .didChange, type: .contentRemoved, added: added, removed: gone))
    }

    /// Moves a store's files (the database, its WAL and shared-memory files, and the folder of its large values) to
    /// `Removed/<date>/` beside it.
    private static func setAside(_ url: URL) throws(RecordStoreError) {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "-")
        let aside = url.deletingLastPathComponent().appendingPathComponent("Removed", isDirectory: true)
            .appendingPathComponent("\(stamp)-\(UUID().uuidString.prefix(8))", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: aside, withIntermediateDirectories: true)
            let support = ExternalData(storeURL: url).folder.deletingLastPathComponent()
            for file in ["", "-wal", "-shm"].map({ URL(fileURLWithPath: url.path + $0) }) + [support] {
                guard FileManager.default.fileExists(atPath: file.path) else { continue }
                try FileManager.default.moveItem(at: file, to: aside.appendingPathComponent(file.lastPathComponent))
            }
        } catch {
            throw RecordStoreError(.storeFailed, "the store could not be set aside: \(error)")
        }
    }

    func post(_ transition: StoreTransition) {
        transitionBroadcast.send(transition)
        let name =
            transition.phase == .willChange ? Self.storesWillChangeNotification : Self.storesDidChangeNotification
        NotificationCenter.default.post(name: name, object: self, userInfo: transition.userInfo)
    }
}
