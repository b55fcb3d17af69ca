import Foundation
import Synchronization

/// A document: the model of a file or file package, which opens, saves itself, closes and reverts safely — the
/// Linux equivalent of UIKit's `UIDocument`.
///
/// Subclass it, override ``contents(forType:)`` to give a snapshot of your model as `Data` (a flat file) or a
/// ``FileWrapper`` (a package), and ``load(fromContents:ofType:)`` to rebuild the model from them. Report edits with
/// ``updateChangeCount(_:)`` or through ``undoManager``; the document then saves by itself after ``autosaveDelay``.
///
/// ```swift
/// final class NoteDocument: Document {
///     var text = ""
///     override func contents(forType typeName: String) throws -> Any { Data(text.utf8) }
///     override func load(fromContents contents: Any, ofType typeName: String?) throws {
///         text = String(decoding: contents as? Data ?? Data(), as: UTF8.self)
///     }
/// }
/// let note = NoteDocument(fileURL: url)
/// if await note.open() { note.text += "more"; note.updateChangeCount(.done) }
/// await note.close()
/// ```
///
/// Like UIDocument, the class is main-actor isolated. File I/O runs off the main actor on the document's own serial
/// queue, in the order operations were asked for (see ``performAsynchronousFileAccess(_:)``), and every read and
/// write is coordinated with ``FileCoordinator``. Saves are crash-safe: the new contents are written to a temporary
/// sibling, flushed to disk, and renamed over the file, so a crash leaves the old or the new file, never a mix. The
/// document is a ``FilePresenter``: when another writer changes the file, a document without unsaved changes reverts
/// to the new contents by itself.
@MainActor
open class Document: FilePresenter {
    /// The file the document reads from and saves to. Follows the file when another writer moves it.
    open internal(set) var fileURL: URL {
        didSet { presentedURL.withLock { $0 = fileURL } }
    }

    /// The date the file was last modified as of the last open, save or revert; `nil` before any of them.
    open var fileModificationDate: Date?

    /// The document's state; every change is announced through ``Document/stateChangedNotification`` and
    /// ``stateUpdates``.
    open internal(set) var documentState: State = .closed {
        didSet {
            guard documentState != oldValue else { return }
            if documentState.contains(.editingDisabled) && !oldValue.contains(.editingDisabled) { disableEditing() }
            if !documentState.contains(.editingDisabled) && oldValue.contains(.editingDisabled) { enableEditing() }
            announceState()
        }
    }

    /// Progress of a load in progress (a download, for synced items); setting it adds `.progressAvailable`.
    open var progress: Progress? {
        didSet {
            if progress == nil {
                documentState.remove(.progressAvailable)
            } else {
                documentState.insert(.progressAvailable)
            }
        }
    }

    /// How long after the first unsaved change the document saves itself. Default: one second.
    public var autosaveDelay: Duration = .seconds(1)
    /// The clock autosaves wait on (the continuous clock; a test hands in one it moves itself).
    public var clock: any Clock<Duration> = ContinuousClock()

    /// The registry that maps the file's extension to its type.
    public let typeRegistry: DocumentTypeRegistry

    let serializer = FileAccessSerializer()
    /// The order completion handlers are called in: the order their operations were asked for, even when a later
    /// operation finishes before an earlier one's handler could run.
    let answers = FileAccessSerializer()
    let presentedURL: Mutex<URL>
    let fileAccessQueue: DispatchQueue
    private let operationQueue: OperationQueue
    var changeTracking = ChangeTracking()
    var autosaveTask: Task<Void, Never>?
    var undoObservers: [any NSObjectProtocol] = []
    var stateContinuations: [UUID: AsyncStream<State>.Continuation] = [:]
    var unresolvedConflictVersions: Set<String> = []
    var isPresenting = false
    /// The identity of the item as of the last open, save or revert (see ``FileIdentity``).
    var diskIdentity: FileIdentity?
    var autosaveFailures = 0
    /// Set when another writer deleted the file: saves to it are dropped from then on.
    var wasDeleted = false
    /// Set from the moment a close is asked for until it is done: a revert then leaves editing disabled.
    var isClosing = false
    var errorsBeingHandled = 0
    var _undoManager: UndoManager?

    /// Creates a closed document for the file at `url`, typed through ``DocumentTypeRegistry/default``. Nothing is
    /// read until ``open()``.
    public init(fileURL url: URL) {
        precondition(url.isFileURL, "a document needs a file URL")
        fileURL = url.standardizedFileURL
        presentedURL = Mutex(url.standardizedFileURL)
        typeRegistry = .default
        fileAccessQueue = DispatchQueue(label: "DocumentKit.Document.fileAccess")
        operationQueue = Self.makePresenterQueue()
    }

    /// Creates a closed document for the file at `url` whose types come from `typeRegistry`.
    public init(fileURL url: URL, typeRegistry: DocumentTypeRegistry) {
        precondition(url.isFileURL, "a document needs a file URL")
        fileURL = url.standardizedFileURL
        presentedURL = Mutex(url.standardizedFileURL)
        self.typeRegistry = typeRegistry
        fileAccessQueue = DispatchQueue(label: "DocumentKit.Document.fileAccess")
        operationQueue = Self.makePresenterQueue()
    }

    private static func makePresenterQueue() -> OperationQueue {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "DocumentKit.Document.presenter"
        return queue
    }

    isolated deinit {
        autosaveTask?.cancel()
        for observer in undoObservers { NotificationCenter.default.removeObserver(observer) }
        for continuation in stateContinuations.values { continuation.finish() }
    }

    /// The name shown to users: the file name without its extension. Override to show another.
    open var localizedName: String {
        fileURL.deletingPathExtension().lastPathComponent
    }

    /// The type identifier of the document, from its file name extension through ``typeRegistry``.
    open var fileType: String? {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: fileURL.path, isDirectory: &isDirectory)
        if exists { return typeRegistry.type(forFileAt: fileURL, isDirectory: isDirectory.boolValue).identifier }
        return typeRegistry.type(forFilenameExtension: fileURL.pathExtension).identifier
    }

    /// The type to save as. Defaults to ``fileType``.
    open var savingFileType: String? { fileType }

    /// The extension for a file of `typeName`: the type's preferred extension, else the current file's.
    open func fileNameExtension(forType typeName: String?, saveOperation: SaveOperation) -> String {
        if let typeName, let ext = typeRegistry.type(withIdentifier: typeName)?.preferredFilenameExtension {
            return ext
        }
        return fileURL.pathExtension
    }

    /// The document's undo manager, created on first use. Its groups, undos and redos move the change count
    /// (closing a group = `.done`, undo = `.undone`, redo = `.redone`), so undoable edits autosave by themselves.
    open var undoManager: UndoManager! {
        get {
            if let manager = _undoManager { return manager }
            let manager = UndoManager()
            attachUndoManager(manager)
            return manager
        }
        set {
            detachUndoManager()
            if let newValue { attachUndoManager(newValue) }
        }
    }

    private func attachUndoManager(_ manager: UndoManager) {
        _undoManager = manager
        undoObservers = observeChanges(of: manager)
    }

    private func detachUndoManager() {
        for observer in undoObservers { NotificationCenter.default.removeObserver(observer) }
        undoObservers = []
        _undoManager = nil
    }

    // MARK: Subclass points

    /// Returns a snapshot of the document's model to save: `Data` for a flat file or a ``FileWrapper`` for a
    /// package. Called on the main actor. The default throws: subclasses must override it.
    open func contents(forType typeName: String) throws -> Any {
        throw DocumentError(.invalidContents, "\(Self.self) does not override contents(forType:)")
    }

    /// Rebuilds the model from `contents` (`Data` or ``FileWrapper``) read from the file. Called on the main actor.
    /// The default does nothing.
    open func load(fromContents contents: Any, ofType typeName: String?) throws {}

    /// Called when editing becomes unsafe (before a revert or close): stop accepting user edits. Default: nothing.
    open func disableEditing() {}

    /// Called when editing is safe again. Default: nothing.
    open func enableEditing() {}

    // MARK: Life cycle (implementations in Document+Opening, +Saving, +Closing)
    //
    // As in UIKit, the completion-handler forms are the primitives a subclass overrides; the async forms call them,
    // and so do autosave and close, so an override sees every open, save, close and revert. Each queues its file
    // access at the moment it is called.

    /// Opens the document: reads the file off the main actor (coordinated) and hands its contents to
    /// ``load(fromContents:ofType:)``, then calls `completionHandler` on the main actor with the outcome. On failure
    /// (missing, unreadable or unloadable file) the error goes to ``handleError(_:userInteractionPermitted:)`` and
    /// the document stays closed. ``openDocument()`` is the throwing form.
    open func open(completionHandler: (@MainActor @Sendable (Bool) -> Void)? = nil) {
        let turn = serializer.reserve()
        let answer = answers.reserve()
        // The completion form: queued now, in call order; the handler runs on the main actor, as UIDocument's does.
        Task {
            let success = await reportingErrors(userInteractionPermitted: true) { try await openDocument(turn: turn) }
            await answering(answer) { completionHandler?(success) }
        }
    }

    /// Opens the document; `true` on success. Calls ``open(completionHandler:)``.
    @discardableResult
    public func open() async -> Bool {
        await withCheckedContinuation { continuation in open { continuation.resume(returning: $0) } }
    }

    /// Saves the document to `url`, then calls `completionHandler` on the main actor with the outcome.
    /// `.forCreating` writes a new file (and fails, changing nothing, if an item is already there) and leaves the
    /// document open; `.forOverwriting` replaces the file. The snapshot is taken on the main actor through
    /// ``contents(forType:)``; the write runs off it, coordinated and crash-safe. On failure the document gains
    /// `.savingError` (cleared by the next good save) and the error goes to
    /// ``handleError(_:userInteractionPermitted:)``. ``saveDocument(to:for:)`` is the throwing form.
    open func save(
        to url: URL,
        for saveOperation: SaveOperation,
        completionHandler: (@MainActor @Sendable (Bool) -> Void)? = nil
    ) {
        _undoManager?.closeAutomaticGroupNow()  // the edits of this turn are part of what is saved
        let ownFile = isOwnFile(url)
        let turn = serializer.reserve()
        let answer = answers.reserve()
        // The completion form: queued now, in call order; the handler runs on the main actor, as UIDocument's does.
        Task {
            let success = await reportingErrors(userInteractionPermitted: true) {
                try await saveDocument(to: url, for: saveOperation, turn: turn, ownFile: ownFile)
            }
            await answering(answer) { completionHandler?(success) }
        }
    }

    /// Saves the document; `true` on success. Calls ``save(to:for:completionHandler:)``.
    @discardableResult
    public func save(to url: URL, for saveOperation: SaveOperation) async -> Bool {
        await withCheckedContinuation { continuation in
            save(to: url, for: saveOperation) { continuation.resume(returning: $0) }
        }
    }

    /// Saves over the document's file, through ``save(to:for:completionHandler:)``, if it is open and has unsaved
    /// changes — what the autosave timer and ``close(completionHandler:)`` call; `completionHandler` gets `true` when
    /// nothing needed saving. A save queued behind a move follows the file; one queued behind its deletion is
    /// dropped (see ``DocumentError/Code-swift.struct/closedByDeletion``).
    open func autosave(completionHandler: (@MainActor @Sendable (Bool) -> Void)? = nil) {
        _undoManager?.closeAutomaticGroupNow()  // an undoable edit made in this turn is an unsaved change
        guard hasUnsavedChanges, !documentState.contains(.closed) else {
            let turn = serializer.reserve()
            let answer = answers.reserve()
            // Nothing to save; answer in call order, on the main actor.
            Task {
                await inTurn(turn) {}
                await answering(answer) { completionHandler?(true) }
            }
            return
        }
        // The save asks again in its turn: one queued behind another save that wrote everything has nothing to add,
        // and writing the same contents again would put them over what another writer may have saved in between.
        AutosaveScope.$isAutosave.withValue(true) {
            save(to: fileURL, for: .forOverwriting, completionHandler: completionHandler)
        }
    }

    /// Autosaves; `true` when the save succeeded or nothing needed saving. Calls ``autosave(completionHandler:)``.
    @discardableResult
    public func autosave() async -> Bool {
        await withCheckedContinuation { continuation in autosave { continuation.resume(returning: $0) } }
    }

    /// Closes the document: saves unsaved changes through ``autosave(completionHandler:)``, then stops presenting
    /// the file, and calls `completionHandler` on the main actor — with `false` when that last save failed (the
    /// document closes all the same). Editing is disabled while it runs. ``closeDocument()`` is the throwing form.
    open func close(completionHandler: (@MainActor @Sendable (Bool) -> Void)? = nil) {
        guard !documentState.contains(.closed) else {
            // Already closed: nothing to save; answer in call order all the same.
            let turn = serializer.reserve()
            let answer = answers.reserve()
            Task {
                await inTurn(turn) {}
                await answering(answer) { completionHandler?(true) }
            }
            return
        }
        beginClosing()
        let saved = OneShot<Bool>()
        autosave { saved.fulfil($0) }
        let turn = serializer.reserve()  // right behind the last save, whatever is asked for after this call
        let answer = answers.reserve()  // right behind the last save's answer
        // Finishes the close in its turn; the handler runs on the main actor once the last save has answered.
        Task {
            await inTurn(turn) { markClosed() }
            let success = await saved.value
            await answering(answer) { completionHandler?(success) }
        }
    }

    /// Closes the document; `true` unless the last save failed. Calls ``close(completionHandler:)``.
    @discardableResult
    public func close() async -> Bool {
        await withCheckedContinuation { continuation in close { continuation.resume(returning: $0) } }
    }

    /// Discards unsaved changes and reloads the document from `url` (usually ``fileURL``), then calls
    /// `completionHandler` on the main actor with the outcome. Editing is disabled while it runs; on success the
    /// change count is cleared and the undo stack emptied. A failed revert leaves `.editingDisabled` set, as
    /// UIDocument does, keeps the unsaved changes (autosave stays armed) and reports the error.
    /// ``revertDocument(toContentsOf:)`` is the throwing form.
    open func revert(toContentsOf url: URL, completionHandler: (@MainActor @Sendable (Bool) -> Void)? = nil) {
        let turn = serializer.reserve()
        let answer = answers.reserve()
        // The completion form: queued now, in call order; the handler runs on the main actor, as UIDocument's does.
        Task {
            let success = await reportingErrors(userInteractionPermitted: true) {
                try await revertDocument(toContentsOf: url, turn: turn)
            }
            await answering(answer) { completionHandler?(success) }
        }
    }

    /// Reverts; `true` on success. Calls ``revert(toContentsOf:completionHandler:)``.
    @discardableResult
    public func revert(toContentsOf url: URL) async -> Bool {
        await withCheckedContinuation { continuation in
            revert(toContentsOf: url) { continuation.resume(returning: $0) }
        }
    }

    // MARK: Advanced overrides (called on the file-access queue)

    /// Reads the item at `url` and passes its contents to ``load(fromContents:ofType:)`` on the main actor.
    ///
    /// Called on the document's file-access queue. The default reads with a coordinated read — `Data` for a file,
    /// a ``FileWrapper`` for a directory or package — and throws ``DocumentError`` (`.fileNotFound`, `.readFailed`).
    /// An override that reads in its own way must call ``load(fromContents:ofType:)`` on the main actor itself.
    nonisolated open func read(from url: URL) throws {
        try readWithCoordination(from: url)
    }

    /// Writes `contents` to `url` safely: a coordinated write that builds the new item in a temporary sibling through
    /// ``writeContents(_:to:for:originalContentsURL:)``, applies `additionalFileAttributes`, flushes it to disk and
    /// renames it over `url`, so a crash at any instant leaves the old or the new item.
    nonisolated open func writeContents(
        _ contents: Any,
        andAttributes additionalFileAttributes: [AnyHashable: Any]? = nil,
        safelyTo url: URL,
        for saveOperation: SaveOperation
    ) throws {
        try writeSafely(contents, andAttributes: additionalFileAttributes, safelyTo: url, for: saveOperation)
    }

    /// Writes `contents` (`Data` or ``FileWrapper``) to `url`, where nothing exists yet. For a package, members that
    /// did not change are hard-linked from `originalContentsURL` instead of written again. The default flushes what
    /// it writes; when an override writes instead, the save flushes the whole item before moving it into place (an
    /// override that calls `super` and then adds files of its own must flush those itself).
    nonisolated open func writeContents(
        _ contents: Any,
        to url: URL,
        for saveOperation: SaveOperation,
        originalContentsURL: URL?
    ) throws {
        try writeItem(contents, to: url, for: saveOperation, originalContentsURL: originalContentsURL)
    }

    /// Attributes to give the saved item, keyed by `FileAttributeKey` raw values (such as `posixPermissions`). The
    /// default asks for none beyond what the write sets.
    nonisolated open func fileAttributesToWrite(to url: URL, for saveOperation: SaveOperation) throws -> [AnyHashable:
        Any]
    {
        [:]
    }

    /// Runs `block` on the document's background file-access queue, after every file operation asked for before it
    /// (open, save, close, revert, other blocks) has finished, and before any asked for after it.
    nonisolated open func performAsynchronousFileAccess(_ block: @escaping @Sendable () -> Void) {
        enqueueFileAccess(block)
    }

    // MARK: Change tracking (see Document+ChangeTracking)

    /// Whether the document has changes not yet saved. Drives autosave and ``close()``.
    open var hasUnsavedChanges: Bool { changeTracking.hasUnsavedChanges }

    /// Records a change. `.done`, `.undone` and `.redone` move the change count; `.cleared` marks the document
    /// clean. Once the document is dirty, it saves itself after ``autosaveDelay``.
    open func updateChangeCount(_ change: ChangeKind) {
        changeTracking.apply(change)
        scheduleAutosaveIfNeeded()
    }

    /// A token for the changes a save of `saveOperation` is about to write; pass it back to
    /// ``updateChangeCount(withToken:for:)`` when the save succeeds.
    open func changeCountToken(for saveOperation: SaveOperation) -> Any {
        changeTracking.token()
    }

    /// Marks the changes seen by `changeCountToken` as saved; changes made after it was taken stay unsaved.
    open func updateChangeCount(withToken changeCountToken: Any, for saveOperation: SaveOperation) {
        guard let token = changeCountToken as? ChangeTracking.Token else { return }
        changeTracking.saved(token)
        scheduleAutosaveIfNeeded()
    }

    // MARK: Errors (see Document+ErrorHandling)

    /// Called with the error of a failed open, save, revert or close. The default calls
    /// ``finishedHandlingError(_:recovered:)`` with `recovered: false` at once; override to show the error, and call
    /// it yourself when done.
    open func handleError(_ error: any Error, userInteractionPermitted: Bool) {
        finishedHandlingError(error, recovered: false)
    }

    /// Tells the document that handling `error` has ended.
    open func finishedHandlingError(_ error: any Error, recovered: Bool) {
        errorsBeingHandled = max(0, errorsBeingHandled - 1)
    }

    /// Called when an error is still being handled but the user can no longer be asked (the document is closing).
    /// The default ends the handling as not recovered.
    open func userInteractionNoLongerPermitted(forError error: any Error) {
        if errorsBeingHandled > 0 { finishedHandlingError(error, recovered: false) }
    }

    // MARK: State announcements

    /// Every later value of ``documentState``, delivered on the main actor; the stream ends when the document does.
    public var stateUpdates: AsyncStream<State> {
        let (stream, continuation) = AsyncStream<State>.makeStream(bufferingPolicy: .unbounded)
        let id = UUID()
        stateContinuations[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { @MainActor in self?.stateContinuations[id] = nil }  // runs after the consumer stops listening
        }
        return stream
    }

    private func announceState() {
        NotificationCenter.default.post(name: Document.stateChangedNotification, object: self)
        for continuation in stateContinuations.values { continuation.yield(documentState) }
    }

    // MARK: FilePresenter

    // As in UIKit, these can be overridden; an override should call `super` (the document's own behaviour lives
    // in Document+Presenting).

    /// The URL the document presents to coordinators: ``fileURL`` (updated at once when the file moves).
    nonisolated open var presentedItemURL: URL? { presentedURL.withLock { $0 } }

    /// The serial queue on which coordinators message the document.
    nonisolated open var presentedItemOperationQueue: OperationQueue { operationQueue }

    /// Lets a reader in once the document's pending file access is done, holding further access until it is done.
    nonisolated open func relinquishPresentedItem(
        toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void
    ) {
        relinquishToReader(reader)
    }

    /// Lets a writer in once the document's pending file access is done; afterwards a document without unsaved
    /// changes reverts to what the writer wrote.
    nonisolated open func relinquishPresentedItem(
        toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void
    ) {
        relinquishToWriter(writer)
    }

    /// Saves unsaved changes so that a reader sees them (decided, with the file's location, in the save's turn).
    nonisolated open func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        saveForReader(completionHandler: completionHandler)
    }

    /// The file is being (or, by another process, has been) deleted: the document closes without saving, and no
    /// save asked for before is written.
    nonisolated open func accommodatePresentedItemDeletion(
        completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        closeForDeletion(completionHandler: completionHandler)
    }

    /// The file moved: the document follows it, and saves go to the new place.
    nonisolated open func presentedItemDidMove(to newURL: URL) {
        followMove(to: newURL)
    }

    /// Another writer changed the file: a document without unsaved changes reverts to it.
    nonisolated open func presentedItemDidChange() {
        revertForChange()
    }

    /// A version appeared; a conflict version puts the document `.inConflict`.
    nonisolated open func presentedItemDidGain(_ version: PresentedItemVersion) {
        noteGained(version)
    }

    /// A version went away; when no conflict version is left the document leaves `.inConflict`.
    nonisolated open func presentedItemDidLose(_ version: PresentedItemVersion) {
        noteLost(version)
    }

    /// A conflict version was resolved; when none is left the document leaves `.inConflict`.
    nonisolated open func presentedItemDidResolveConflict(_ version: PresentedItemVersion) {
        noteResolved(version)
    }
}
