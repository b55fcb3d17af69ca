import Foundation

/// Foundation's `NSErrorPointer`, which swift-corelibs-foundation does not declare: where an Apple API reports an
/// error through an out-parameter, pass `&error` for a `var error: NSError?`.
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?

/// Coordinates reading and writing of files and directories among the objects, threads and processes of this machine
/// that use them — the equivalent of Foundation's `NSFileCoordinator`.
///
/// (Pass-through placeholder: the accessor runs at once, without locking or presenter messages.)
public final class FileCoordinator: @unchecked Sendable {
    // @unchecked Sendable: placeholder with no mutable state.

    /// Options for coordinated reading.
    public struct ReadingOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Do not ask presenters to save their changes first.
        public static let withoutChanges = ReadingOptions(rawValue: 1 << 0)
        /// Resolve a symbolic link at the URL and read its target.
        public static let resolvesSymbolicLink = ReadingOptions(rawValue: 1 << 1)
        /// Only metadata that is already available is read; content is not downloaded.
        public static let immediatelyAvailableMetadataOnly = ReadingOptions(rawValue: 1 << 2)
        /// The item is read for uploading; a package is handed to the accessor as one file.
        public static let forUploading = ReadingOptions(rawValue: 1 << 3)
    }

    /// Options for coordinated writing.
    public struct WritingOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// The item is about to be deleted.
        public static let forDeleting = WritingOptions(rawValue: 1 << 0)
        /// The item is about to be moved.
        public static let forMoving = WritingOptions(rawValue: 1 << 1)
        /// The writer merges its changes with the item's contents.
        public static let forMerging = WritingOptions(rawValue: 1 << 2)
        /// The writer replaces the item's contents entirely.
        public static let forReplacing = WritingOptions(rawValue: 1 << 3)
        /// Only metadata that does not depend on content changes.
        public static let contentIndependentMetadataOnly = WritingOptions(rawValue: 1 << 4)
    }

    /// The presenter this coordinator acts for: it is not messaged about this coordinator's own access.
    public let filePresenter: (any FilePresenter)?

    /// Creates a coordinator, optionally acting for `filePresenter`.
    public init(filePresenter: (any FilePresenter)? = nil) {
        self.filePresenter = filePresenter
    }

    /// Registers a presenter so that coordinators message it about access to its item.
    public class func addFilePresenter(_ filePresenter: any FilePresenter) {}

    /// Unregisters a presenter.
    public class func removeFilePresenter(_ filePresenter: any FilePresenter) {}

    /// Runs `reader` with coordinated read access to the item at `url`; on failure sets `outError` and does not run it.
    public func coordinate(
        readingItemAt url: URL,
        options: ReadingOptions = [],
        error outError: NSErrorPointer,
        byAccessor reader: (URL) -> Void
    ) {
        reader(url)
    }

    /// Runs `writer` with coordinated write access to the item at `url`; on failure sets `outError` and does not run
    /// it.
    public func coordinate(
        writingItemAt url: URL,
        options: WritingOptions = [],
        error outError: NSErrorPointer,
        byAccessor writer: (URL) -> Void
    ) {
        writer(url)
    }

    /// Reads with coordination and returns what `reader` returns; throws a ``FileCoordinationError`` when access
    /// cannot be had, or what `reader` throws.
    public func coordinate<T>(
        readingItemAt url: URL,
        options: ReadingOptions = [],
        byAccessor reader: (URL) throws -> T
    ) throws -> T {
        try reader(url)
    }

    /// Writes with coordination and returns what `writer` returns; throws a ``FileCoordinationError`` when access
    /// cannot be had, or what `writer` throws.
    public func coordinate<T>(
        writingItemAt url: URL,
        options: WritingOptions = [],
        byAccessor writer: (URL) throws -> T
    ) throws -> T {
        try writer(url)
    }

    /// Tells presenters that this coordinator moved the item at `oldURL` to `newURL`. Call from a write accessor.
    public func item(at oldURL: URL, didMoveTo newURL: URL) {}
}

/// Why coordinated access failed.
public struct FileCoordinationError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable { case cancelled, timedOut, presenterTimedOut, wouldDeadlock, invalidURL, io }
        private let base: Base
        /// The coordinator was cancelled before access was granted.
        public static let cancelled = Code(base: .cancelled)
        /// Access was not granted within the timeout.
        public static let timedOut = Code(base: .timedOut)
        /// A presenter did not call its completion handler within the timeout.
        public static let presenterTimedOut = Code(base: .presenterTimedOut)
        /// The access would wait on access this same thread already holds.
        public static let wouldDeadlock = Code(base: .wouldDeadlock)
        /// The URL is not a file URL.
        public static let invalidURL = Code(base: .invalidURL)
        /// The lock files could not be used.
        public static let io = Code(base: .io)
        public var description: String { base.rawValue }
    }
    /// The kind of failure.
    public var code: Code
    /// What happened, naming the item (and presenter, where one is at fault).
    public var message: String
    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { "FileCoordinationError.\(code): \(message)" }
}
