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

    /// The registry that maps the file's extension to its type.
    public let typeRegistry: DocumentTypeRegistry

    let serializer = FileAccessSerializer()
    let presentedURL: Mutex<URL>
    let fileAccessQueue: DispatchQueue
    private let operationQueue: OperationQueue
    var changeTracking = ChangeTracking()
    var autosaveTask: Task<Void, Never>?
    var undoObservers: [any NSObjectProtocol] = []
    var stateContinuations: [UUID: AsyncStream<State>.Continuation] = [:]
    var unresolvedConflictVersions: Set<String> = []
    var isPresenting = false
    var errorsBeingHandled = 0
    private var _undoManager: UndoManager?

    /// Creates a closed document for the file at `url`. Nothing is read until ``open()``.
    public init(fileURL url: URL, typeRegistry: DocumentTypeRegistry = .default) {
        precondition(url.isFileURL, "a document needs a file URL")
        fileURL = url.standardizedFileURL
        presentedURL = Mutex(url.standardizedFileURL)
        self.typeRegistry = typeRegistry
        fileAccessQueue = DispatchQueue(label: "DocumentKit.Document.fileAccess")
        operationQueue = OperationQueue()
        operationQueue.maxConcurrentOperationCount = 1
        operationQueue.name = "DocumentKit.Document.presenter"
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

    /// Opens the document: reads the file off the main actor (coordinated) and hands its contents to
    /// ``load(fromContents:ofType:)``. Returns `false`, after reporting the error through
    /// ``handleError(_:userInteractionPermitted:)``, when the file is missing or cannot be read or loaded; the
    /// document then stays closed. ``openDocument()`` is the throwing form.
    @discardableResult
    open func open() async -> Bool {
        await reportingErrors(userInteractionPermitted: true) { try await openDocument() }
    }

    /// Opens the document and calls `completionHandler` on the main actor with the outcome.
    open func open(completionHandler: (@MainActor @Sendable (Bool) -> Void)? = nil) {
        let turn = serializer.reserve()
        // The completion form: queued now, in call order; the handler runs on the main actor, as UIDocument's does.
        Task {
            let success = await reportingErrors(userInteractionPermitted: true) { try await openDocument(turn: turn) }
            completionHandler?(success)
        }
    }

    /// Saves the document to `url`. `.forCreating` writes a new file (and fails, changing nothing, if an item is
    /// already there) and leaves the document open; `.forOverwriting` replaces the file. The snapshot is taken on
    /// the main actor through ``contents(forType:)``; the write runs off it, coordinated and crash-safe. On failure
    /// the document gains `.savingError` (cleared by the next good save) and the error goes to
    /// ``handleError(_:userInteractionPermitted:)``. ``saveDocument(to:for:)`` is the throwing form.
    @discardableResult
    open func save(to url: URL, for saveOperation: SaveOperation) async -> Bool {
        await reportingErrors(userInteractionPermitted: true) { try await saveDocument(to: url, for: saveOperation) }
    }

    /// Saves the document and calls `completionHandler` on the main actor with the outcome.
    open func save(
        to url: URL,
        for saveOperation: SaveOperation,
        completionHandler: (@MainActor @Sendable (Bool) -> Void)? = nil
    ) {
        let turn = serializer.reserve()
        // The completion form: queued now, in call order; the handler runs on the main actor, as UIDocument's does.
        Task {
            let success = await reportingErrors(userInteractionPermitted: true) {
                try await saveDocument(to: url, for: saveOperation, turn: turn)
            }
            completionHandler?(success)
        }
    }

    /// Saves over ``fileURL`` if there are unsaved changes; what the autosave timer calls. Returns `true` when
    /// nothing needed saving.
    @discardableResult
    open func autosave() async -> Bool {
        guard hasUnsavedChanges, !documentState.contains(.closed) else { return true }
        return await save(to: fileURL, for: .forOverwriting)
    }

    /// Autosaves and calls `completionHandler` on the main actor with the outcome.
    open func autosave(completionHandler: (@MainActor @Sendable (Bool) -> Void)? = nil) {
        // The completion form: the caller does not wait; the handler runs on the main actor, as UIDocument's does.
        Task {
            let success = await autosave(); completionHandler?(success)
        }
    }

    /// Closes the document: saves unsaved changes first, then stops presenting the file. Editing is disabled while
    /// it runs. Returns `false` when that last save failed (the document closes all the same).
    /// ``closeDocument()`` is the throwing form.
    @discardableResult
    open func close() async -> Bool {
        await reportingErrors(userInteractionPermitted: false) { try await closeDocument() }
    }

    /// Closes the document and calls `completionHandler` on the main actor with the outcome.
    open func close(completionHandler: (@MainActor @Sendable (Bool) -> Void)? = nil) {
        let turn = serializer.reserve()
        // The completion form: queued now, in call order; the handler runs on the main actor, as UIDocument's does.
        Task {
            let success = await reportingErrors(userInteractionPermitted: false) { try await closeDocument(turn: turn) }
            completionHandler?(success)
        }
    }

    /// Discards unsaved changes and reloads the document from `url` (usually ``fileURL``). Editing is disabled while
    /// it runs; on success the change count is cleared and the undo stack emptied. A failed revert leaves
    /// `.editingDisabled` set, as UIDocument does, and reports the error. ``revertDocument(toContentsOf:)`` is the
    /// throwing form.
    @discardableResult
    open func revert(toContentsOf url: URL) async -> Bool {
        await reportingErrors(userInteractionPermitted: true) { try await revertDocument(toContentsOf: url) }
    }

    /// Reverts and calls `completionHandler` on the main actor with the outcome.
    open func revert(toContentsOf url: URL, completionHandler: (@MainActor @Sendable (Bool) -> Void)? = nil) {
        let turn = serializer.reserve()
        // The completion form: queued now, in call order; the handler runs on the main actor, as UIDocument's does.
        Task {
            let success = await reportingErrors(userInteractionPermitted: true) {
                try await revertDocument(toContentsOf: url, turn: turn)
            }
            completionHandler?(success)
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

    /// The URL the document presents to coordinators: ``fileURL`` while open.
    nonisolated public var presentedItemURL: URL? { presentedURL.withLock { $0 } }

    /// The serial queue on which coordinators message the document.
    nonisolated public var presentedItemOperationQueue: OperationQueue { operationQueue }
}
