import Foundation

/// An object that presents a file or directory to the user and wants to hear about coordinated access to it —
/// the equivalent of Foundation's `NSFilePresenter`.
///
/// Register a presenter with ``FileCoordinator/addFilePresenter(_:)``. Coordinators created by other code (in this
/// process or, for change, move and deletion notices, in another process on the same machine) then message it before
/// and after they access the presented item. Every message is delivered on ``presentedItemOperationQueue``. All
/// requirements but the first two have default implementations that do nothing (or complete at once), as Apple's
/// optional protocol methods do.
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
    public init(persistentIdentifier: String, isConflict: Bool, modificationDate: Date? = nil, savingComputer: String? = nil)
    {
        self.persistentIdentifier = persistentIdentifier
        self.isConflict = isConflict
        self.modificationDate = modificationDate
        self.savingComputer = savingComputer
    }
}

extension FilePresenter {
    public func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        reader(nil)
    }
    public func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        writer(nil)
    }
    public func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        completionHandler(nil)
    }
    public func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        completionHandler(nil)
    }
    public func presentedItemDidMove(to newURL: URL) {}
    public func presentedItemDidChange() {}
    public func presentedItemDidGain(_ version: PresentedItemVersion) {}
    public func presentedItemDidLose(_ version: PresentedItemVersion) {}
    public func presentedItemDidResolveConflict(_ version: PresentedItemVersion) {}
    public func accommodatePresentedSubitemDeletion(
        at url: URL,
        completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        completionHandler(nil)
    }
    public func presentedSubitemDidAppear(at url: URL) {}
    public func presentedSubitemDidChange(at url: URL) {}
    public func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {}
    public func presentedSubitem(at url: URL, didGain version: PresentedItemVersion) {}
    public func presentedSubitem(at url: URL, didLose version: PresentedItemVersion) {}
    public func presentedSubitem(at url: URL, didResolve version: PresentedItemVersion) {}
}
