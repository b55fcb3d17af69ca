import Foundation
import Synchronization

/// Foundation's `NSErrorPointer`, which swift-corelibs-foundation does not declare: where an Apple API reports an
/// error through an out-parameter, pass `&error` for a `var error: NSError?`.
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?

/// Coordinates reading and writing of files and directories among the objects, threads and processes of this machine
/// that use them — the equivalent of Foundation's `NSFileCoordinator`.
///
/// Readers share an item, writers exclude everyone else. Access to an item also takes shared access to every
/// directory above it, so writing, moving or deleting a directory waits for all access inside it; an item inside a
/// package is coordinated as the whole package. Locks live in this process (per thread) and in lock files in
/// ``Configuration/lockDirectory``, so coordinators in other processes of the same user are coordinated too.
///
/// Before it takes its locks, a coordination asks the registered ``FilePresenter``s of the item (and of the
/// directories above it and the items inside it) to save, accommodate a deletion and relinquish the item; after the
/// accessor it tells them what happened and gives the item back. A coordinator never messages its own
/// ``filePresenter``.
///
/// ```swift
/// let coordinator = FileCoordinator(filePresenter: document)
/// let data = try coordinator.coordinate(readingItemAt: url) { url in try Data(contentsOf: url) }
/// try coordinator.coordinate(writingItemAt: url, options: .forReplacing) { url in
///     try data.write(to: url, options: .atomic)
/// }
/// ```
///
/// Deadlocks are diagnosed rather than suffered: a write nested inside a read of the same item on one thread fails
/// with ``FileCoordinationError/Code/wouldDeadlock``, a wait longer than ``Configuration/accessTimeout`` with
/// ``FileCoordinationError/Code/timedOut``, and a presenter that does not answer within
/// ``Configuration/presenterTimeout`` with ``FileCoordinationError/Code/presenterTimedOut``.
public final class FileCoordinator: Sendable {
    /// Options for coordinated reading.
    public struct ReadingOptions: OptionSet, Sendable {
        /// The options' bits.
        public let rawValue: UInt
        /// Creates options from bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Do not ask presenters to save their changes first (they are still asked to relinquish the item).
        public static let withoutChanges = ReadingOptions(rawValue: 1 << 0)
        /// Resolve a symbolic link at the URL and read its target: the accessor gets the target's URL.
        public static let resolvesSymbolicLink = ReadingOptions(rawValue: 1 << 1)
        /// Only metadata that is already available is read; content is not downloaded and presenters are not asked
        /// anything (the shared lock is still taken).
        public static let immediatelyAvailableMetadataOnly = ReadingOptions(rawValue: 1 << 2)
        /// The item is read for uploading. On Apple's platforms a package is then handed over as one zip file; here
        /// the accessor gets the item itself.
        public static let forUploading = ReadingOptions(rawValue: 1 << 3)
    }

    /// Options for coordinated writing.
    public struct WritingOptions: OptionSet, Sendable {
        /// The options' bits.
        public let rawValue: UInt
        /// Creates options from bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// The item is about to be deleted: presenters are asked to accommodate the deletion first.
        public static let forDeleting = WritingOptions(rawValue: 1 << 0)
        /// The item is about to be moved (call ``FileCoordinator/item(at:didMoveTo:)`` from the accessor).
        public static let forMoving = WritingOptions(rawValue: 1 << 1)
        /// The writer merges its changes with the item's contents.
        public static let forMerging = WritingOptions(rawValue: 1 << 2)
        /// The writer replaces the item's contents entirely.
        public static let forReplacing = WritingOptions(rawValue: 1 << 3)
        /// Only metadata that does not depend on content changes.
        public static let contentIndependentMetadataOnly = WritingOptions(rawValue: 1 << 4)
    }

    /// The presenter this coordinator acts for: it is not messaged about this coordinator's own access, and its
    /// record of its item is updated after this coordinator's writes, so the file watcher does not report them to it.
    public let filePresenter: (any FilePresenter)?

    /// The timeouts and lock directory this coordinator uses.
    public let configuration: Configuration

    private struct State {
        var purposeIdentifier: String?  // made on first read: a UUID costs a read of /dev/urandom
        var active: [ObjectIdentifier: CoordinationCancellation] = [:]
        var moves: [(thread: Int32, from: String, to: String)] = []
    }
    private let state = Mutex(State())

    /// Creates a coordinator with the default ``Configuration``, optionally acting for `filePresenter`.
    public convenience init(filePresenter: (any FilePresenter)? = nil) {
        self.init(filePresenter: filePresenter, configuration: Configuration())
    }

    /// Creates a coordinator acting for `filePresenter` (or none) with `configuration`.
    public init(filePresenter: (any FilePresenter)?, configuration: Configuration) {
        self.filePresenter = filePresenter
        self.configuration = configuration
    }

    /// A string that identifies the operation this coordinator performs; a fresh UUID unless set. Kept for
    /// compatibility with Apple's API: coordinators do not currently treat equal purposes specially.
    public var purposeIdentifier: String {
        get {
            state.withLock { state in
                if let identifier = state.purposeIdentifier { return identifier }
                let identifier = UUID().uuidString
                state.purposeIdentifier = identifier
                return identifier
            }
        }
        set { state.withLock { $0.purposeIdentifier = newValue } }
    }

    /// Registers a presenter so that coordinators message it about access to its item: coordinators of this process
    /// before and after their access, and — through a file watcher — changes, moves and deletions made by other
    /// processes. The presenter is held weakly; remove it with ``removeFilePresenter(_:)`` when it stops presenting.
    public class func addFilePresenter(_ filePresenter: any FilePresenter) {
        FilePresenterRegistry.shared.add(filePresenter)
    }

    /// Unregisters a presenter; it gets no more messages from coordinators started afterwards.
    public class func removeFilePresenter(_ filePresenter: any FilePresenter) {
        FilePresenterRegistry.shared.remove(filePresenter)
    }

    /// The registered presenters that are still alive, in the order they were added.
    public class var filePresenters: [any FilePresenter] {
        FilePresenterRegistry.shared.presenters
    }

    /// Cancels this coordinator's coordinations that are waiting for presenters or locks: they fail with
    /// ``FileCoordinationError/Code/cancelled`` and their accessors do not run. Accessors already running are not
    /// affected, nor are coordinations started later.
    public func cancel() {
        let active = state.withLock { Array($0.active.values) }
        for cancellation in active { cancellation.cancel() }
    }

    /// Announces that the item at `oldURL` is about to move to `newURL`. Call from a write accessor before moving.
    /// Nothing needs announcing in advance on Linux; kept for source compatibility with Apple's API.
    public func item(at oldURL: URL, willMoveTo newURL: URL) {}

    /// Tells presenters that this coordinator moved the item at `oldURL` to `newURL`. Call from a write accessor
    /// (usually one with ``WritingOptions/forMoving``) after the move. When the accessor returns, presenters of the
    /// item (and of items inside it) get ``FilePresenter/presentedItemDidMove(to:)``, presenters of directories
    /// above it ``FilePresenter/presentedSubitem(at:didMoveTo:)``, and their registrations follow them.
    public func item(at oldURL: URL, didMoveTo newURL: URL) {
        guard let from = try? CoordinationPath.canonical(oldURL), let to = try? CoordinationPath.canonical(newURL)
        else { return }
        let thread = LinuxSystem.currentThreadID()
        state.withLock { $0.moves.append((thread, from, to)) }
    }

    // MARK: Running an access

    func register(_ cancellation: CoordinationCancellation) {
        state.withLock { $0.active[ObjectIdentifier(cancellation)] = cancellation }
    }

    func unregister(_ cancellation: CoordinationCancellation) {
        _ = state.withLock { $0.active.removeValue(forKey: ObjectIdentifier(cancellation)) }
    }

    /// How many moves the calling thread has announced and not yet handed to a finished access (an outer
    /// accessor's, when coordinations nest).
    func moveMark() -> Int {
        let thread = LinuxSystem.currentThreadID()
        return state.withLock { $0.moves.count { $0.thread == thread } }
    }

    /// The moves the calling thread announced after `mark`.
    func takeMoves(after mark: Int) -> [(from: String, to: String)] {
        let thread = LinuxSystem.currentThreadID()
        return state.withLock { state in
            var seen = 0
            var taken: [(from: String, to: String)] = []
            state.moves.removeAll { move in
                guard move.thread == thread else { return false }
                seen += 1
                guard seen > mark else { return false }
                taken.append((move.from, move.to))
                return true
            }
            return taken
        }
    }

    /// Runs `accessor` on the calling thread with coordinated access to `items`.
    func perform<T>(_ items: [CoordinatedAccess.Item], accessor: ([URL]) throws -> T) throws -> T {
        let access = CoordinatedAccess(coordinator: self, items: items)
        try access.acquire()
        let mark = moveMark()
        defer { access.finish(moves: takeMoves(after: mark)) }
        return try accessor(items.map(\.accessURL))
    }
}
