import Foundation

/// Records changes so they can be undone and redone: Apple's `UndoManager`, for platforms whose Foundation lacks it.
///
/// Register the inverse of every change with ``registerUndo(withTarget:handler:)``. The classic pattern is a setter
/// that registers a call to itself with the old value, so undoing registers the redo and redoing registers the
/// undo:
///
/// ```swift
/// func setTitle(_ newTitle: String) {
///     let oldTitle = title
///     undoManager.registerUndo(withTarget: self) { $0.setTitle(oldTitle) }
///     undoManager.setActionName("Rename")
///     title = newTitle
/// }
/// ```
///
/// ## Groups
///
/// Operations are collected in groups; ``undo()`` and ``redo()`` act on one whole group. With ``groupsByEvent``
/// (the default) the first registration outside any group opens a group, and that group is closed at the end of
/// the current turn of the main actor: the close is scheduled on the main queue (`DispatchQueue.main.async`), so it
/// runs as soon as the code now running on the main actor finishes or suspends. ``undo()`` closes such a group
/// first. A program that never yields the main actor (a command-line tool without a main loop) should group
/// explicitly with ``beginUndoGrouping()`` and ``endUndoGrouping()``.
///
/// ## Notifications and change tracking
///
/// Notifications are posted on `NotificationCenter.default` with the undo manager as object, synchronously on the
/// main actor, in Apple's order:
///
/// - ``beginUndoGrouping()``: ``checkpointNotification``, then ``didOpenUndoGroupNotification``.
/// - ``endUndoGrouping()``: ``checkpointNotification``, ``willCloseUndoGroupNotification``, then (group closed)
///   ``didCloseUndoGroupNotification`` with ``groupIsDiscardableKey`` in its `userInfo`. Posted for nested groups
///   too (then ``groupingLevel`` is still at least 1), and for groups that close empty.
/// - ``undo()``: the close of an open top-level group as above, then ``undoNestedGroup()``'s:
///   ``checkpointNotification``, ``willUndoChangeNotification``, the operations run, ``didUndoChangeNotification``.
/// - ``redo()``: ``checkpointNotification``, ``willRedoChangeNotification``, the operations run,
///   ``didRedoChangeNotification``.
///
/// While undoing or redoing, the undo manager posts **no** group notifications (no checkpoint, open or close): the
/// group it forms internally to record the inverse operations, and any group a handler opens, are silent. So an
/// observer that maps ``didCloseUndoGroupNotification`` → "change done", ``didUndoChangeNotification`` → "change
/// undone" and ``didRedoChangeNotification`` → "change redone" sees exactly one event per user step. A document
/// should count "done" only when ``groupingLevel`` is 0 on ``didCloseUndoGroupNotification`` (a top-level group
/// closed), so nested groups are not counted twice. ``isUndoing`` and ``isRedoing`` are false whenever any of
/// these notifications is posted. An automatic group is announced as closed at the end of the main actor's turn
/// (or by ``undo()``), so that is when a document learns of the change; an explicit group that closes empty is
/// announced too, which at worst makes a document save once for nothing. Reading ``canRedo`` posts a checkpoint,
/// as Apple's does.
///
/// ## Differences from Apple
///
/// - The target of a registration is held weakly; an operation whose target has gone away is skipped.
/// - Programmer errors that make Apple raise an exception stop the program with a precondition failure:
///   ``endUndoGrouping()`` with no open group, ``undo()`` with more than one group open, ``undo()``/``redo()``
///   while undoing or redoing, registering with ``groupsByEvent`` off and no open group, unbalanced
///   ``enableUndoRegistration()``, ``undoNestedGroup()`` right after operations were registered in the open group.
/// - ``removeAllActions()`` also drops open groups (``groupingLevel`` becomes 0).
/// - `runLoopModes` and the selector-based registration do not exist.
///
/// ## Subclassing
///
/// Every member Apple's `UndoManager` declares `open` is `open` here too: undoing and redoing, grouping,
/// registration, the action names, discardability and menu titles (override the menu-title methods to localise
/// them), ``isUndoing``, ``isRedoing``, ``canUndo``, ``canRedo``, ``groupsByEvent`` and ``levelsOfUndo``. An
/// override can call `super`. The manager goes through its own open members where its documentation says so
/// (``undo()`` calls ``endUndoGrouping()`` and ``undoNestedGroup()``, a registration under ``groupsByEvent`` calls
/// ``beginUndoGrouping()``, the menu-item titles use the action names), but keeps its bookkeeping on its own state:
/// overriding ``isUndoing`` or ``groupingLevel`` changes what callers see, not where operations are recorded.
@MainActor
open class UndoManager {
    /// Closed top-level groups that can be undone, the oldest first.
    var undoStack: [UndoGroup] = []
    /// Closed top-level groups that can be redone, the oldest first.
    var redoStack: [UndoGroup] = []
    /// The groups being built, outermost first.
    var openGroups: [UndoGroup] = []
    /// Whether `openGroups[0]` was opened by a registration under `groupsByEvent`.
    var automaticGroupIsOpen = false
    /// Whether a main-queue job that closes the automatic group is pending.
    var automaticCloseIsScheduled = false
    /// How many `disableUndoRegistration()` calls are not yet balanced.
    var disableCount = 0
    /// Set while posting a checkpoint so that an observer reading `canRedo` does not recurse.
    var isPostingCheckpoint = false
    /// Storage for `levelsOfUndo`.
    var storedLevelsOfUndo = 0

    /// Storage for `isUndoing`: set while the operations of an undo run.
    var undoInProgress = false
    /// Storage for `isRedoing`: set while the operations of a redo run.
    var redoInProgress = false

    /// Whether the manager is performing undo operations; registrations then go to the redo stack.
    open var isUndoing: Bool { undoInProgress }
    /// Whether the manager is performing redo operations; registrations then go to the undo stack.
    open var isRedoing: Bool { redoInProgress }

    /// Whether a registration outside any group opens a group that closes at the end of the main actor's turn.
    ///
    /// Defaults to `true`. With `false`, register only inside ``beginUndoGrouping()`` / ``endUndoGrouping()``.
    open var groupsByEvent = true

    /// The maximum number of top-level groups kept on each stack; 0 (the default) means no limit.
    ///
    /// When a stack grows past the limit, its oldest groups are dropped; lowering the limit drops them at once.
    open var levelsOfUndo: Int {
        get { storedLevelsOfUndo }
        set {
            storedLevelsOfUndo = max(0, newValue)
            trim(&undoStack)
            trim(&redoStack)
        }
    }

    /// Creates an empty undo manager with ``groupsByEvent`` on and no limit on levels.
    public init() {}

    /// Whether there is something to undo: a closed group on the undo stack, or operations in the open group.
    open var canUndo: Bool {
        !undoStack.isEmpty || openGroups.contains { !$0.isEmpty }
    }

    /// Whether there is something to redo.
    ///
    /// As Apple's does, reading it first posts ``checkpointNotification`` (not while undoing, redoing or already
    /// posting one), so that observers can register pending operations — which would clear the redo stack.
    open var canRedo: Bool {
        postCheckpoint()
        return !redoStack.isEmpty
    }

    /// Whether registrations are recorded; false between ``disableUndoRegistration()`` and the matching
    /// ``enableUndoRegistration()``.
    open var isUndoRegistrationEnabled: Bool { disableCount == 0 }

    /// Stops recording registrations until the matching ``enableUndoRegistration()``; calls nest.
    open func disableUndoRegistration() {
        disableCount += 1
    }

    /// Balances one ``disableUndoRegistration()``; registrations are recorded again once all are balanced.
    ///
    /// - Precondition: a ``disableUndoRegistration()`` is pending.
    open func enableUndoRegistration() {
        precondition(disableCount > 0, "enableUndoRegistration() without a matching disableUndoRegistration()")
        disableCount -= 1
    }

    /// Registers the operation that undoes a change: `handler` is called with `target` when the change is undone.
    ///
    /// The operation joins the innermost open group; with none open and ``groupsByEvent`` on, a group is opened
    /// (posting ``checkpointNotification`` and ``didOpenUndoGroupNotification``) and closed at the end of the
    /// main actor's turn. Unless the manager is undoing or redoing, registering clears the redo stack. While
    /// undoing, the operation becomes part of the redo step; while redoing, of the undo step. Nothing is
    /// recorded while registration is disabled.
    ///
    /// - Parameters:
    ///   - target: The object the change is undone on. It is held weakly; if it is gone, the operation is skipped.
    ///   - handler: Undoes the change; typically calls a method of `target` that registers its own inverse.
    /// - Precondition: a group is open or ``groupsByEvent`` is on.
    open func registerUndo<TargetType: AnyObject>(
        withTarget target: TargetType,
        handler: @escaping @MainActor (TargetType) -> Void
    ) {
        guard isUndoRegistrationEnabled else { return }
        if openGroups.isEmpty {
            precondition(groupsByEvent, "registerUndo outside a group while groupsByEvent is false")
            beginUndoGrouping()
            automaticGroupIsOpen = true
            scheduleAutomaticClose()
        }
        if !undoInProgress && !redoInProgress {
            redoStack.removeAll()
        }
        let action = UndoAction(target: target) { handler(unsafeDowncast($0, to: TargetType.self)) }
        openGroups[openGroups.count - 1].entries.append(.action(action))
    }

    /// Empties the undo and redo stacks, drops open groups and re-enables registration. Posts nothing.
    open func removeAllActions() {
        undoStack.removeAll()
        redoStack.removeAll()
        openGroups.removeAll()
        automaticGroupIsOpen = false
        disableCount = 0
    }

    /// Removes every operation registered with `target` from both stacks and the open groups; steps left empty
    /// disappear. Call it when `target` goes away.
    ///
    /// - Parameter target: The object passed to ``registerUndo(withTarget:handler:)``.
    open func removeAllActions(withTarget target: Any) {
        let object = target as AnyObject
        func strip(_ stack: inout [UndoGroup]) {
            for index in stack.indices { stack[index].removeActions(withTarget: object) }
            stack.removeAll { $0.isEmpty }
        }
        strip(&undoStack)
        strip(&redoStack)
        for index in openGroups.indices { openGroups[index].removeActions(withTarget: object) }
    }

    // MARK: Undoing and redoing

    /// Undoes the last step: closes the open top-level group if there is one (as ``endUndoGrouping()`` does,
    /// notifications included), then calls ``undoNestedGroup()``.
    ///
    /// The operations registered while undoing form the redo step, named like the undone step.
    ///
    /// - Precondition: at most one group is open, and the manager is not undoing or redoing.
    open func undo() { performUndo() }

    /// Undoes the last group, top-level or nested, and records what it registers as one redo step.
    ///
    /// With no group open, that is the last step of the undo stack. Inside an open group, it is the nested group
    /// closed last in the innermost non-empty open group. Posts ``checkpointNotification``, then, if there is
    /// something to undo, ``willUndoChangeNotification`` before running the operations and
    /// ``didUndoChangeNotification`` after.
    ///
    /// - Precondition: the manager is not undoing or redoing, and no operation was registered directly in the
    ///   open group since its last nested group closed.
    open func undoNestedGroup() { performUndoNestedGroup() }

    /// Redoes the last undone step, recording what it registers as one undo step named like it.
    ///
    /// Posts ``checkpointNotification``, then, if there is something to redo, ``willRedoChangeNotification``
    /// before running the operations and ``didRedoChangeNotification`` after.
    ///
    /// - Precondition: the manager is not undoing or redoing.
    open func redo() { performRedo() }

    // MARK: Groups

    /// The number of open groups: 0 when none is open, 2 inside a group nested in another.
    open var groupingLevel: Int { openGroups.count }

    /// Opens a group: operations registered until the matching ``endUndoGrouping()`` are undone as one step.
    ///
    /// Groups nest; a nested group is undone with its parent, or alone with ``undoNestedGroup()``. Posts
    /// ``checkpointNotification``, opens the group, then posts ``didOpenUndoGroupNotification`` (nothing while
    /// undoing or redoing).
    open func beginUndoGrouping() { performBeginUndoGrouping() }

    /// Closes the innermost open group.
    ///
    /// A nested group becomes one entry of its parent; a top-level group is pushed on the undo stack (the redo
    /// stack while undoing), the oldest group being dropped beyond ``levelsOfUndo``. A group that closes empty
    /// is discarded. Posts ``checkpointNotification`` and ``willCloseUndoGroupNotification`` before closing and
    /// ``didCloseUndoGroupNotification`` after (nothing while undoing or redoing).
    ///
    /// - Precondition: a group is open.
    open func endUndoGrouping() { performEndUndoGrouping() }

    // MARK: Action names and discardability

    /// The name of the step ``undo()`` would undo, or "" when it has none.
    open var undoActionName: String { nameOfStepToUndo }

    /// The name of the step ``redo()`` would redo, or "" when it has none.
    open var redoActionName: String { nameOfStepToRedo }

    /// The title of the Undo menu item, such as "Undo Typing", or "Undo" when the step has no name.
    open var undoMenuItemTitle: String { undoMenuTitle(forUndoActionName: undoActionName) }

    /// The title of the Redo menu item, such as "Redo Typing", or "Redo" when the step has no name.
    open var redoMenuItemTitle: String { redoMenuTitle(forUndoActionName: redoActionName) }

    /// Names the step being recorded, as shown in "Undo <name>" and "Redo <name>"; "" removes the name.
    ///
    /// Names every open group (while undoing, the redo step being recorded — though an undone step passes its own
    /// name on to its redo step); with none open, the last step of the undo stack.
    ///
    /// - Parameter actionName: A short, capitalised verb phrase such as "Typing" or "Delete Item".
    open func setActionName(_ actionName: String) { recordActionName(actionName) }

    /// Marks the step being recorded as discardable (or not): a change that need not be saved, such as a selection.
    ///
    /// Applies to the innermost open group; with none open, to the last step of the undo stack. A group is
    /// discardable when it is marked so or made only of discardable nested groups; its redo step inherits it.
    ///
    /// - Parameter discardable: Whether the step is discardable.
    open func setActionIsDiscardable(_ discardable: Bool) { recordActionIsDiscardable(discardable) }

    /// Whether the step ``undo()`` would undo is discardable.
    open var undoActionIsDiscardable: Bool { stepToUndoIsDiscardable }

    /// Whether the step ``redo()`` would redo is discardable.
    open var redoActionIsDiscardable: Bool { stepToRedoIsDiscardable }

    /// The Undo menu title for a step named `actionName`: "Undo" alone when it is empty, else "Undo <name>".
    ///
    /// Override it to localise the titles; ``undoMenuItemTitle`` uses it.
    ///
    /// - Parameter actionName: A name set with ``setActionName(_:)``.
    /// - Returns: The English title.
    open func undoMenuTitle(forUndoActionName actionName: String) -> String {
        actionName.isEmpty ? "Undo" : "Undo \(actionName)"
    }

    /// The Redo menu title for a step named `actionName`: "Redo" alone when it is empty, else "Redo <name>".
    ///
    /// Override it to localise the titles; ``redoMenuItemTitle`` uses it.
    ///
    /// - Parameter actionName: A name set with ``setActionName(_:)``.
    /// - Returns: The English title.
    open func redoMenuTitle(forUndoActionName actionName: String) -> String {
        actionName.isEmpty ? "Redo" : "Redo \(actionName)"
    }

    /// Drops the oldest groups of `stack` beyond ``levelsOfUndo``.
    func trim(_ stack: inout [UndoGroup]) {
        if storedLevelsOfUndo > 0 && stack.count > storedLevelsOfUndo {
            stack.removeFirst(stack.count - storedLevelsOfUndo)
        }
    }
}
