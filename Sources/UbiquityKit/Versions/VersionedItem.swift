import DocumentKit
import Foundation
import SyncEngine
import UbiquityProtocol

/// The item a ``FileVersion`` call is about: the open session of its container and its path. Reads come from the
/// engine's state database (a quick local read, the same from this process whether the engine runs here or in
/// another process); changes go through the engine, which alone writes that database.
struct VersionedItem: Sendable {
    let session: ContainerSession
    let path: ItemPath

    /// The item's URL.
    var url: URL { session.layout.url(of: path) }

    /// The item at `url`, in a container this process has open.
    /// - Throws: ``UbiquityError/Code/notUbiquitous`` for a URL outside the app's containers;
    ///   ``UbiquityError/Code/engineUnavailable`` when its container is not open yet (ask for its URL first, as on
    ///   Apple's systems).
    static func locate(_ url: URL) throws -> VersionedItem {
        let (ubiquity, container, path) = try FileManager.locate(url)
        guard let session = ubiquity.openedSession(for: container) else {
            throw UbiquityError(
                .engineUnavailable,
                "container \(container) is not open yet; ask for its URL (url(forUbiquityContainerIdentifier:)) first")
        }
        return VersionedItem(session: session, path: path)
    }

    /// The item's versions as this device knows them; `nil` when the engine knows no item there.
    func versions() throws -> LocalVersionState? {
        try Self.call { try session.state.versionState(ofItemAt: path) }
    }

    /// The downloaded copy of an other version, whether or not it is there.
    func copy(of version: VersionID, of item: ItemID) -> URL {
        folder(of: version, of: item).appendingPathComponent(path.name, isDirectory: false)
    }

    /// The folder of the downloaded copy of an other version.
    func folder(of version: VersionID, of item: ItemID) -> URL {
        session.layout.versions.appendingPathComponent(item.string, isDirectory: true)
            .appendingPathComponent(version.string, isDirectory: true)
    }

    /// Changes the item's versions through its engine — in this process, or over the socket of another process's —
    /// which changes its records at once (reads here see the change when this returns), queues the same for the
    /// service, asks for a round to send it, and tells presenters and listeners what changed.
    /// - Parameters:
    ///   - item: The item the caller means; a different item now at the path is not changed.
    ///   - change: The change.
    func change(of item: ItemID, _ change: VersionChange) throws {
        let (path, layout) = (path, session.layout)
        try Self.call {
            switch session.connection {
            case .embedded(let sync): try sync.changeVersionsNow(of: path, item: item, change)
            case .external:
                _ = try EngineSocketClient.request(.changeVersionsNow(path, item: item, change), at: layout)
            }
        }
    }

    /// Runs a call on the state database, turning the engine's errors into ``UbiquityError``s.
    static func call<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as UbiquityError {
            throw error
        } catch let error as ProtocolError {
            switch error.code {
            case .itemNotFound: throw UbiquityError(.itemNotFound, error.message)
            case .unknownVersion: throw UbiquityError(.unknownVersion, error.message)
            case .engineUnavailable: throw UbiquityError(.engineUnavailable, error.message)
            default: throw UbiquityError(.failed, "\(error.code.rawValue): \(error.message)")
            }
        } catch {
            throw UbiquityError(.failed, "the container's state database failed: \(error)")
        }
    }
}
