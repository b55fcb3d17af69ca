import Foundation
import SyncEngine
import UbiquityProtocol

extension FileVersion {
    /// The current version of the item at `url`: the file itself, the version every device shows (the service
    /// picks the winner of a conflict by the latest modification date, the same for all).
    /// - Returns: `nil` for a URL outside the app's containers, in a container not open yet, for an item the
    ///   engine does not know or a folder, and for a new file before its first version reached the service.
    public class func currentVersionOfItem(at url: URL) -> FileVersion? {
        guard let item = try? VersionedItem.locate(url), let state = try? item.versions(),
            state.item.kind != .directory, let current = state.item.serverVersion ?? state.item.baseVersion
        else { return nil }
        let saved = try? item.session.state.currentVersionRecord(of: state.item.id)
        return FileVersion(current: current, of: state.item, at: item, saved: saved?.id == current ? saved : nil)
    }

    /// The versions of the item at `url` other than the current one — conflict versions and old ones the service
    /// keeps — newest first, as this device last heard them (with its own changes applied).
    /// - Returns: `nil` for a URL outside the app's containers, in a container not open yet, or for no item; an
    ///   empty array for a file the engine has not recorded yet.
    public class func otherVersionsOfItem(at url: URL) -> [FileVersion]? {
        guard let item = try? VersionedItem.locate(url) else { return nil }
        guard let state = try? item.versions() else {
            return FileManager.default.fileExists(atPath: item.url.path) ? [] : nil
        }
        return state.others.map { FileVersion($0, of: state.item, at: item) }
    }

    /// The conflict versions of the item at `url` not yet marked resolved, newest first — the same versions, with
    /// the same ``persistentIdentifier``s, on every device once it has heard of them.
    /// - Returns: `nil` where ``otherVersionsOfItem(at:)`` is `nil`.
    public class func unresolvedConflictVersionsOfItem(at url: URL) -> [FileVersion]? {
        otherVersionsOfItem(at: url)?.filter { $0.isConflict && !$0.isResolved }
    }

    /// The version of the item at `url` whose ``persistentIdentifier`` is `persistentIdentifier`: the current one or
    /// another.
    /// - Returns: `nil` when no version of the item has that identifier (or it is not an identifier at all), and
    ///   where ``currentVersionOfItem(at:)`` is `nil`.
    public class func version(itemAt url: URL, forPersistentIdentifier persistentIdentifier: String) -> FileVersion? {
        guard let id = try? VersionID(persistentIdentifier), let item = try? VersionedItem.locate(url),
            let state = try? item.versions()
        else { return nil }
        if id == state.item.serverVersion ?? state.item.baseVersion, state.item.kind != .directory {
            return FileVersion(current: id, of: state.item, at: item)
        }
        return state.others.first { $0.id == id }.map { FileVersion($0, of: state.item, at: item) }
    }
}
