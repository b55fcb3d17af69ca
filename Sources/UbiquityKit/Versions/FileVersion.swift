import Foundation
import SyncEngine
import Synchronization
import UbiquityProtocol

/// One version of an item in a ubiquity container: its current version (the file itself) or another one the service
/// keeps — a conflict version, or an old one — Apple's `NSFileVersion`.
///
/// When two devices save the same item from the same base, the service keeps both; every device shows the same
/// winner (the latest modification date) as the current version, and the other as an unresolved conflict version,
/// and an open ``DocumentKit/Document`` is `.inConflict`. Resolve it as the seeds do:
///
/// ```swift
/// let url = document.fileURL
/// if let chosen, chosen.isConflict {
///     _ = try await chosen.contentsURL()                 // its contents here, if they are not yet
///     _ = try chosen.replaceItem(at: url)                // the chosen contents become the current version
/// }
/// for version in FileVersion.unresolvedConflictVersionsOfItem(at: url) ?? [] {
///     version.isResolved = true
/// }
/// try FileVersion.removeOtherVersionsOfItem(at: url)
/// ```
///
/// Every call answers from the container engine's state database (a quick local read, the same whether the engine
/// runs in this process or in `ubiquity sync`), so the synchronous forms never wait for the network. Changes —
/// ``isResolved``, ``remove()``, ``removeOtherVersionsOfItem(at:)``, ``replaceItem(at:options:)`` — take effect on
/// this device at once (presenters hear of them, a following call sees them, a document leaves `.inConflict` when no
/// conflict is left) and are queued durably for the service, which hands them to every other device: at once when
/// it is reachable, when it is back otherwise. Only ``contentsURL()`` needs the service, for contents not yet here.
///
/// The container must be open (its URL asked for) before these calls find anything in it.
public final class FileVersion: Sendable, CustomStringConvertible {
    /// The item's URL.
    let itemURL: URL
    /// The item's id, checked again before every change (another item may be at the URL by then).
    let itemID: ItemID
    /// The version's id.
    let id: VersionID
    /// The service's record of the version; `nil` for the current version (the file itself).
    let record: VersionRecord?
    /// The record of the current version, when this device has it (for its saving computer).
    private let currentRecord: VersionRecord?
    private let location: URL
    private let resolved: Mutex<Bool>

    /// The current version of `item`, with its record when this device has it.
    init(current id: VersionID, of item: LocalItem, at versioned: VersionedItem, saved: VersionRecord? = nil) {
        itemURL = versioned.url
        itemID = item.id
        self.id = id
        record = nil
        currentRecord = saved
        location = versioned.url
        resolved = Mutex(true)
    }

    /// An other version of `item`.
    init(_ record: VersionRecord, of item: LocalItem, at versioned: VersionedItem) {
        itemURL = versioned.url
        itemID = item.id
        id = record.id
        self.record = record
        currentRecord = nil
        location = versioned.copy(of: record.id, of: item.id)
        resolved = Mutex(record.isResolved || !record.isConflict)
    }

    /// Where the version's contents are on this machine. For the current version, the item's own URL; for another
    /// version, a file in the container's private folder (never in `Documents/`), which is there when
    /// ``hasLocalContents`` is true. This property does not download: ``contentsURL()`` does, and returns this URL
    /// when the contents are in place.
    public var url: URL { location }

    /// The name to show for the version: the item's file name.
    public var localizedName: String? { itemURL.lastPathComponent }

    /// The name of the device that saved the version, as it signed in; `nil` for a current version this device
    /// has no record of yet (a local change not uploaded).
    public var localizedNameOfSavingComputer: String? { (record ?? currentRecord)?.savingDevice.name }

    /// When the version was last modified on the device that saved it; for the current version, the modification
    /// date of the file here (`nil` while the item is not downloaded).
    public var modificationDate: Date? {
        if let record { return record.modificationDate }
        return (try? FileManager.default.attributesOfItem(atPath: itemURL.path))?[.modificationDate] as? Date
    }

    /// The version's identifier, the same on every device; ``version(itemAt:forPersistentIdentifier:)`` finds the
    /// version again by it.
    public var persistentIdentifier: String { id.string }

    /// Whether the version lost a conflict: saved from a base that was no longer current, it was kept beside the
    /// version the service made current. Conflict versions stay until resolved and removed.
    public var isConflict: Bool { record?.isConflict ?? false }

    /// Whether the conflict is resolved; `true` for versions that are not conflict versions.
    ///
    /// Set it to `true` once the conflict is dealt with: the version is marked resolved on this device at once
    /// (it leaves ``unresolvedConflictVersionsOfItem(at:)``; an open document leaves `.inConflict` when no
    /// conflict is left) and on the service, hence every device, when it is reachable. Setting `false` has no
    /// effect, as on Apple's systems; so has setting it on a version that is no longer one of the item's. Then
    /// remove the versions no longer useful (``remove()``, ``removeOtherVersionsOfItem(at:)``).
    public var isResolved: Bool {
        get { resolved.withLock { $0 } }
        set {
            guard newValue, !isResolved else { return }
            // A property cannot throw: a version already gone or resolved elsewhere has nothing left to resolve.
            try? markResolved()
        }
    }

    /// Whether the version's contents are on this machine (at ``url``).
    public var hasLocalContents: Bool { FileManager.default.fileExists(atPath: location.path) }

    public var description: String {
        let kind = record == nil ? "current" : isConflict ? (isResolved ? "resolved conflict" : "conflict") : "other"
        return "FileVersion(\(kind) \(persistentIdentifier) of \(itemURL.lastPathComponent))"
    }

    /// Marks this conflict version resolved here and, through the engine's queue, on the service.
    /// - Throws: ``UbiquityError/Code/unknownVersion`` when it is not one of the item's conflict versions (any
    ///   more); ``UbiquityError/Code/itemNotFound``.
    func markResolved() throws {
        let item = try VersionedItem.locate(itemURL)
        try item.change(of: itemID, .markResolved(id))
        resolved.withLock { $0 = true }
    }
}
