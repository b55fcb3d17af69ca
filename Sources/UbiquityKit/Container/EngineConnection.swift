import Foundation
import SyncEngine
import UbiquityProtocol

/// How a container session reaches its engine: in this process, or over the socket of the engine another process
/// runs. Every operation means the same either way.
enum EngineConnection: Sendable {
    /// The engine runs in this process.
    case embedded(ContainerSync)
    /// Another process runs the engine (`ubiquity sync`); requests go over its socket.
    case external(EngineSocketClient)

    /// The engine's events from now on.
    func events() async throws -> AsyncStream<SyncEvent> {
        switch self {
        case .embedded(let sync): sync.events()
        case .external(let client): try await client.events()
        }
    }

    /// Every item the engine knows, read from its state database `state`, and the transfers under way: the items
    /// straight from the database rather than over the engine's socket, which for a large container took seconds.
    func items(in state: LocalStateStore) async throws -> (items: [LocalItem], transfers: [ItemID: ItemTransfer]) {
        let transfers =
            switch self {
            case .embedded(let sync): sync.currentTransfers()
            case .external(let client): try await client.transfers()
            }
        return (try await state.snapshotItems(), transfers)
    }

    /// The item at `path`.
    func item(at path: ItemPath) async throws -> LocalItem? {
        switch self {
        case .embedded(let sync): try await sync.item(at: path)
        case .external(let client): try await client.item(at: path)
        }
    }

    /// Downloads the item's current content.
    func download(_ path: ItemPath) async throws {
        switch self {
        case .embedded(let sync): try await sync.download(path)
        case .external(let client): try await client.download(path)
        }
    }

    /// Drops the item's local content, keeping a placeholder.
    func evict(_ path: ItemPath) async throws {
        switch self {
        case .embedded(let sync): try await sync.evict(path)
        case .external(let client): try await client.evict(path)
        }
    }

    /// The item's versions on the service, newest first, and its current version.
    func versions(of path: ItemPath) async throws -> (current: VersionID?, versions: [VersionRecord]) {
        switch self {
        case .embedded(let sync): try await sync.versions(of: path)
        case .external(let client): try await client.versions(of: path)
        }
    }

    /// The item's other versions as the engine last heard them.
    func otherVersions(of path: ItemPath) async throws -> [VersionRecord] {
        switch self {
        case .embedded(let sync): try await sync.otherVersions(of: path)
        case .external(let client): try await client.otherVersions(of: path)
        }
    }

    /// The local copy of a version (downloaded the first time).
    func contents(of version: VersionID, at path: ItemPath) async throws -> URL {
        switch self {
        case .embedded(let sync): try await sync.contents(of: version, at: path)
        case .external(let client): try await client.contents(of: version, at: path)
        }
    }

    /// Resolves the item's conflicts keeping `keep` (`nil`: the current version).
    func resolve(_ path: ItemPath, keeping keep: VersionID?) async throws {
        switch self {
        case .embedded(let sync): try await sync.resolve(path, keeping: keep)
        case .external(let client): try await client.resolve(path, keeping: keep)
        }
    }

    /// The key-value store as the device sees it.
    func keyValues() async throws -> [String: PropertyListValue] {
        switch self {
        case .embedded(let sync): try await sync.keyValues()
        case .external(let client): try await client.keyValues()
        }
    }

    /// Writes values and removes keys of the key-value store.
    func setKeyValues(_ puts: [String: PropertyListValue], removing removes: Set<String>) async throws {
        switch self {
        case .embedded(let sync): try await sync.setKeyValues(puts, removing: removes)
        case .external(let client): try await client.setKeyValues(puts, removing: removes)
        }
    }

    /// Runs a sync round now.
    func syncNow() async throws {
        switch self {
        case .embedded(let sync): try await sync.syncOnce()
        case .external(let client): try await client.syncNow()
        }
    }
}
