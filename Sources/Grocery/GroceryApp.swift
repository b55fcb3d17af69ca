import DocumentKit
import Foundation
import Logging
import SyncEngine
import UbiquityKit
import UbiquityProtocol

/// The grocery app of the seeds on one device: its container, the item documents in it, found through a
/// `MetadataQuery` on `Item_*`, and its preferences in the key-value store.
///
/// ```swift
/// let app = try GroceryApp(profile: try DeviceProfile.load("laptop"))
/// let milk = try await app.add("Milk")
/// for entry in try await app.items() { print(entry.light, entry.displayName) }
/// await app.close()
/// ```
@MainActor
public final class GroceryApp {
    /// The app's container (its iCloud entitlement).
    public static let container = try! ContainerID("TEAM.com.example.grocery")

    /// The UbiquityKit instance of this device.
    public let ubiquity: Ubiquity
    /// The device's name, as versions name the saving computer.
    public let deviceName: String
    /// Where this device keeps what the app remembers between runs (its undo journal).
    let supportFolder: URL
    /// The key-value store of the container, made when first used.
    private var keyValueStore: UbiquitousKeyValueStore?
    /// The tag store (chapter 8), opened when a tag is first asked for.
    var tagStoreOpening: Task<GroceryTagStore, any Error>?
    /// How many ``holdingTagImports(_:)`` calls are running; while any is, this app does not import tags itself.
    var tagImportHolds = 0
    /// Where the app reports what it cannot report by throwing.
    let logger: Logger

    /// Opens the app as the device signed in as `profile`, its container folders under the profile's root.
    /// - Parameters:
    ///   - engine: Where the sync engine runs (default: the one running for the container, else in this process).
    ///   - eagerDownloadLimit: Items up to this size download as soon as they are heard of; larger ones are
    ///     placeholders until opened.
    public init(
        profile: DeviceProfile, engine: UbiquityConfiguration.Engine = .automatic,
        eagerDownloadLimit: Int64 = 1 << 20, logger: Logger = GroceryApp.quietLogger
    ) {
        GroceryItemType.register()
        ubiquity = Ubiquity(
            configuration: UbiquityConfiguration(
                root: profile.rootURL, containers: [Self.container], profile: profile, engine: engine,
                sync: ContainerSync.Configuration(eagerDownloadLimit: eagerDownloadLimit), pollInterval: .seconds(5),
                requestTimeout: .seconds(30), logger: logger))
        deviceName = profile.device.name
        self.logger = logger
        supportFolder = profile.rootURL.appendingPathComponent(".grocery", isDirectory: true)
    }

    /// A logger that reports only errors (the app speaks for itself).
    public static var quietLogger: Logger {
        var logger = Logger(label: "grocery")
        logger.logLevel = .error
        return logger
    }

    /// The container's `Documents` folder, where items live.
    public func documents() async throws -> URL {
        guard let container = try await ubiquity.containerURL(forIdentifier: nil) else {
            throw UbiquityError(.notSignedIn, "the device is not signed in; sign in with `ubiquity login`")
        }
        let documents = container.appendingPathComponent("Documents", isDirectory: true)
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        return documents
    }

    /// Runs a sync round now: this device's changes go up, the other devices' come down — their tags included, once
    /// the tag store is open.
    public func synchronize() async throws {
        try await ubiquity.synchronize()
        try await importTags()
    }

    /// Stops the app: closes the tag store and the container (and an engine running in this process).
    public func close() async {
        if let keyValueStore { await keyValueStore.synchronized() }
        await closeTagStore()
        await ubiquity.shutdown()
    }

    /// The container's key-value store.
    public var store: UbiquitousKeyValueStore {
        if let keyValueStore { return keyValueStore }
        let store = UbiquitousKeyValueStore(ubiquity: ubiquity)
        keyValueStore = store
        return store
    }

    // MARK: Finding items

    /// A query for the app's items, as the seeds write it: documents whose name starts with `Item_`.
    public func makeQuery() -> MetadataQuery {
        let query = MetadataQuery(ubiquity: ubiquity)
        query.searchScopes = [.ubiquitousDocuments]
        let prefix = GroceryItemType.prefix
        query.predicate = #Predicate<MetadataItem> { $0.fileName.starts(with: prefix) }
        return query
    }

    /// The items, in the preferred order, as a query gathers them.
    public func items() async throws -> [GroceryEntry] {
        _ = try await documents()
        let query = makeQuery()
        let events = query.updates()
        guard query.start() else { throw UbiquityError(.notSignedIn, "the query could not start") }
        defer { query.stop() }
        for await event in events {
            if case .didFinishGathering(let results) = event { return sorted(results.map(GroceryEntry.init)) }
        }
        return sorted(query.results.map(GroceryEntry.init))
    }

    /// The entries in the preferred order (see ``sortOrder``); placeholders, whose names and dates are not known
    /// here yet, come last, by file name.
    public func sorted(_ entries: [GroceryEntry]) -> [GroceryEntry] {
        let order = sortOrder
        return entries.sorted { a, b in
            switch (a.name, b.name) {
            case (nil, nil): return a.fileName < b.fileName
            case (nil, _): return false
            case (_, nil): return true
            case (let first?, let second?):
                if order == .newest, a.creationDate != b.creationDate {
                    return (a.creationDate ?? .distantPast) > (b.creationDate ?? .distantPast)
                }
                let names = first.localizedStandardCompare(second)
                return names == .orderedSame ? a.fileName < b.fileName : names == .orderedAscending
            }
        }
    }

    /// The item `reference` names: its name (any case), its id or a prefix of it, or its file name.
    /// - Throws: ``GroceryError/Code/noSuchItem`` or ``GroceryError/Code/ambiguousItem``.
    public func find(_ reference: String, in entries: [GroceryEntry]? = nil) async throws -> GroceryEntry {
        let entries = if let entries { entries } else { try await items() }
        let reference = reference.trimmingCharacters(in: .whitespacesAndNewlines)
        let wanted = reference.lowercased()
        let byName = entries.filter { $0.name?.lowercased() == wanted }
        // An id is matched by at least six of its characters, so that a short name is never taken for one.
        let byID = entries.filter {
            $0.fileName == reference || (wanted.count >= 6 && $0.id.lowercased().hasPrefix(wanted))
        }
        let matches = byName.isEmpty ? byID : byName
        guard let first = matches.first else {
            throw GroceryError(
                .noSuchItem, "no item is named or has the id \"\(reference)\"; `grocery list` shows them")
        }
        guard matches.count == 1 else {
            let names = matches.map { "\($0.displayName) (\($0.id.prefix(8)))" }.joined(separator: ", ")
            throw GroceryError(.ambiguousItem, "\"\(reference)\" matches \(names); give more of the id")
        }
        return first
    }
}
