import DocumentKit
import Foundation
import SyncEngine
import UbiquityProtocol

/// The item a ``FileVersion`` call is about: the open session of its container and its path. Reads come from the
/// engine's state database (a quick local read, the same from this process whether the engine runs here or in
/// another process); changes are made there too and queued for the service.
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
        folder(of: version, of: item).appendingPathComponent(path.name)
    }

    /// The folder of the downloaded copy of an other version.
    func folder(of version: VersionID, of item: ItemID) -> URL {
        session.layout.versions.appendingPathComponent(item.string, isDirectory: true)
            .appendingPathComponent(version.string, isDirectory: true)
    }

    /// Changes the item's versions here at once and queues the same operations for the service (see
    /// `LocalStateStore.changeVersionsLocally`), then tells this process's presenters and listeners what changed —
    /// the engine, finding its records already so when it next hears the item, tells nobody again — and asks the
    /// engine for a round to send them.
    ///
    /// One case is left: an engine round that was already reading the item from the service when the change was
    /// made writes back the versions as the service had them before it. Reads here still show the change (it stays
    /// queued until the service has it, and queued changes are read over the records), but presenters may hear of
    /// the versions again: a removed conflict version gained, then resolved and lost once the service's answer with
    /// the change comes. Steps made one after the other, as the seeds make them, reach the service in one round and
    /// are not split so; closing this case for good is for the engine, which would read the queue over the service's
    /// answer before comparing.
    /// - Parameters:
    ///   - item: The item the caller means; a different item now at the path is not changed.
    ///   - decide: The operations, given the versions inside the transaction.
    /// - Returns: Whether anything changed.
    @discardableResult
    func change(of item: ItemID, _ decide: (LocalVersionState) throws -> [VersionOperation]) throws -> Bool {
        let (before, after) = try Self.call {
            try session.state.changeVersionsLocally(ofItemAt: path) { state in
                guard state.item.id == item else {
                    throw UbiquityError(.itemNotFound, "the item at \(url.path) is another one now")
                }
                return try decide(state)
            }
        }
        guard before != after else { return false }
        for event in Self.events(from: before, to: after) {
            if case .versionLost(let id, _, let version) = event {
                try? FileManager.default.removeItem(at: folder(of: version.id, of: id))
            }
            session.receive(event, announcing: true)
        }
        let connection = session.connection
        // The engine sends the queue at the start of its next round; this asks for that round now instead of at its
        // next poll. Offline the round fails and the engine's own retries send the queue once the service is back.
        Task { try? await connection.syncNow() }
        return true
    }

    /// What a local change tells presenters and listeners, by the rules the engine uses when it hears versions from
    /// the service: a conflict version marked resolved or gone while unresolved is resolved; a version gone is lost
    /// (but one made current is not lost); then the item's new record.
    static func events(from before: LocalVersionState, to after: LocalVersionState) -> [SyncEvent] {
        let (id, path) = (after.item.id, after.item.path)
        let remaining = Dictionary(after.others.map { ($0.id, $0) }) { first, _ in first }
        var events: [SyncEvent] = []
        for old in before.others where old.isConflict && !old.isResolved && remaining[old.id]?.isResolved != false {
            events.append(.versionResolved(id, path, remaining[old.id] ?? old))
        }
        for old in before.others where remaining[old.id] == nil && old.id != after.item.serverVersion {
            events.append(.versionLost(id, path, old))
        }
        events.append(.itemChanged(after.item))
        return events
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
            default: throw UbiquityError(.failed, "\(error.code.rawValue): \(error.message)")
            }
        } catch {
            throw UbiquityError(.failed, "the container's state database failed: \(error)")
        }
    }
}
