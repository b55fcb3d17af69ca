import Foundation

/// An object that presents a file or directory to the user and wants to hear about coordinated access to it —
/// the equivalent of Foundation's `NSFilePresenter`.
///
/// Register a presenter with ``FileCoordinator/addFilePresenter(_:)``. Coordinators created by other code (in this
/// process or, for change, move and deletion notices, in another process on the same machine) then message it before
/// and after they access the presented item. Every message is delivered on ``presentedItemOperationQueue``. All
/// requirements but the first two have default implementations that do nothing (or complete at once), as Apple's
/// optional protocol methods do.
///
/// Registration holds the presenter weakly; remove it when it stops presenting. Registering it again re-records its
/// ``presentedItemURL`` (the registry also re-reads it whenever a coordination starts).
///
/// **Before access.** A coordinator of this process asks every presenter of the item, of a directory above it, or of
/// an item inside it — except its own ``FileCoordinator/filePresenter`` — and waits (at most its presenter timeout)
/// for the answers, before it takes any lock, so a presenter may coordinate its own access (a save) while answering:
/// - reading: ``savePresentedItemChanges(completionHandler:)`` (not with `.withoutChanges`), then
///   ``relinquishPresentedItem(toReader:)``;
/// - writing: ``relinquishPresentedItem(toWriter:)``;
/// - deleting: ``accommodatePresentedItemDeletion(completionHandler:)`` (presenters of directories above:
///   ``accommodatePresentedSubitemDeletion(at:completionHandler:)``), then ``relinquishPresentedItem(toWriter:)``.
///
/// Each message is sent when the previous one completed. A presenter that answers with an error fails the
/// coordination; one that does not answer in time fails it with `presenterTimedOut`.
///
/// **After access** (before the coordinator lets go of its locks), in one operation on the queue:
/// ``presentedItemDidChange()`` after a write (directories above: ``presentedSubitemDidAppear(at:)`` or
/// ``presentedSubitemDidChange(at:)``), ``presentedItemDidMove(to:)`` after a move announced with
/// ``FileCoordinator/item(at:didMoveTo:)`` (directories above: ``presentedSubitem(at:didMoveTo:)``), nothing after a
/// deletion — then the reacquirer the presenter handed back.
///
/// **Other processes.** A file watcher tells presenters of changes, moves and deletions made by other processes
/// (``presentedItemDidChange()``, ``presentedItemDidMove(to:)``, ``accommodatePresentedItemDeletion(completionHandler:)``
/// after the fact, and the subitem messages for directories). A change is only announced when the item's identity
/// (device, inode, size, modification and status-change times; for a package, of everything inside) differs from the
/// one last recorded, and coordinated writes of this process record the new identity for the presenters they told
/// and for the writing coordinator's own presenter — so no presenter hears of one write twice, and a document that
/// saves through `FileCoordinator(filePresenter: self)` does not hear of its own saves at all.
public protocol FilePresenter: AnyObject, Sendable {
    /// The URL of the presented item; `nil` while there is none.
    var presentedItemURL: URL? { get }
    /// The queue on which the presenter's methods are called.
    var presentedItemOperationQueue: OperationQueue { get }

    /// Another coordinator wants to read the item: stop writing, call `reader` with a block to run when it is done.
    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void)
    /// Another coordinator wants to write the item: stop reading and writing, call `writer` with a reacquirer.
    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void)
    /// A reader wants the latest contents: save unsaved changes, then call `completionHandler`.
    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    /// The item is about to be deleted: close it, then call `completionHandler`.
    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    /// The item was moved or renamed to `newURL`.
    func presentedItemDidMove(to newURL: URL)
    /// The item's contents or attributes were changed by another writer.
    func presentedItemDidChange()
    /// The item gained a version (used by sync: a new conflict version, for example).
    func presentedItemDidGain(_ version: PresentedItemVersion)
    /// The item lost a version (another device removed it).
    func presentedItemDidLose(_ version: PresentedItemVersion)
    /// A conflict version of the item was marked resolved.
    func presentedItemDidResolveConflict(_ version: PresentedItemVersion)
    /// An item inside the presented directory or package is about to be deleted.
    func accommodatePresentedSubitemDeletion(at url: URL, completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    /// An item appeared inside the presented directory or package.
    func presentedSubitemDidAppear(at url: URL)
    /// An item inside the presented directory or package changed.
    func presentedSubitemDidChange(at url: URL)
    /// An item inside the presented directory or package moved.
    func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL)
    /// An item inside the presented directory or package gained a version.
    func presentedSubitem(at url: URL, didGain version: PresentedItemVersion)
    /// An item inside the presented directory or package lost a version.
    func presentedSubitem(at url: URL, didLose version: PresentedItemVersion)
    /// A conflict version of an item inside the presented directory or package was resolved.
    func presentedSubitem(at url: URL, didResolve version: PresentedItemVersion)
}

/// What a presenter is told about a version of its item: the sync layer's `FileVersion` reduced to the facts a
/// presenter acts on, so that DocumentKit does not depend on sync.
public struct PresentedItemVersion: Sendable, Hashable {
    /// The version's identifier, stable across devices.
    public var persistentIdentifier: String
    /// Whether the version is an unresolved or resolved conflict version.
    public var isConflict: Bool
    /// When the version was saved.
    public var modificationDate: Date?
    /// The human name of the computer that saved it.
    public var savingComputer: String?

    /// Creates a version description.
    public init(
        persistentIdentifier: String, isConflict: Bool, modificationDate: Date? = nil, savingComputer: String? = nil
    ) {
        self.persistentIdentifier = persistentIdentifier
        self.isConflict = isConflict
        self.modificationDate = modificationDate
        self.savingComputer = savingComputer
    }
}

/// Defaults for the optional requirements: relinquish and complete at once, ignore notices.
extension FilePresenter {
    /// Relinquishes at once, with no reacquirer.
    public func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        reader(nil)
    }
    /// Relinquishes at once, with no reacquirer.
    public func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        writer(nil)
    }
    /// Completes at once: nothing to save.
    public func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        completionHandler(nil)
    }
    /// Completes at once.
    public func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        completionHandler(nil)
    }
    /// Does nothing.
    public func presentedItemDidMove(to newURL: URL) {}
    /// Does nothing.
    public func presentedItemDidChange() {}
    /// Does nothing.
    public func presentedItemDidGain(_ version: PresentedItemVersion) {}
    /// Does nothing.
    public func presentedItemDidLose(_ version: PresentedItemVersion) {}
    /// Does nothing.
    public func presentedItemDidResolveConflict(_ version: PresentedItemVersion) {}
    /// Completes at once.
    public func accommodatePresentedSubitemDeletion(
        at url: URL,
        completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        completionHandler(nil)
    }
    /// Does nothing.
    public func presentedSubitemDidAppear(at url: URL) {}
    /// Does nothing.
    public func presentedSubitemDidChange(at url: URL) {}
    /// Does nothing.
    public func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {}
    /// Does nothing.
    public func presentedSubitem(at url: URL, didGain version: PresentedItemVersion) {}
    /// Does nothing.
    public func presentedSubitem(at url: URL, didLose version: PresentedItemVersion) {}
    /// Does nothing.
    public func presentedSubitem(at url: URL, didResolve version: PresentedItemVersion) {}
}
