import Foundation

/// Why a document operation failed.
///
/// ```swift
/// do { try await document.openDocument() } catch let error as DocumentError where error.code == .fileNotFound { … }
/// ```
public struct DocumentError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case fileNotFound, readFailed, writeFailed, fileExists, invalidContents, notOpen, alreadyOpen,
                closedByDeletion, kindMismatch, downloadFailed
        }
        private let base: Base
        /// The document's file does not exist.
        public static let fileNotFound = Code(base: .fileNotFound)
        /// The document's file is not on this machine yet (a placeholder of a synced item) and could not be
        /// downloaded; the document stayed closed.
        public static let downloadFailed = Code(base: .downloadFailed)
        /// The file exists but could not be read or loaded.
        public static let readFailed = Code(base: .readFailed)
        /// The contents could not be written.
        public static let writeFailed = Code(base: .writeFailed)
        /// A save for creating found an item already at the URL; nothing was written.
        public static let fileExists = Code(base: .fileExists)
        /// `contents(forType:)` returned something other than `Data` or `FileWrapper`.
        public static let invalidContents = Code(base: .invalidContents)
        /// The operation needs an open document.
        public static let notOpen = Code(base: .notOpen)
        /// The document is already open.
        public static let alreadyOpen = Code(base: .alreadyOpen)
        /// A save would replace an item of another kind (a folder with a file, or a folder that is not this
        /// document's package); nothing was written.
        public static let kindMismatch = Code(base: .kindMismatch)
        /// The file was deleted by another writer and the document closed.
        public static let closedByDeletion = Code(base: .closedByDeletion)
        /// The code's stable name, such as `fileNotFound`.
        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public var code: Code
    /// What happened, naming the file.
    public var message: String
    /// The error underneath, if any (a POSIX or coordination error).
    public var underlying: (any Error)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// `DocumentError.<code>: <message>`, with the underlying error when there is one.
    public var description: String {
        if let underlying { return "DocumentError.\(code): \(message) (\(underlying))" }
        return "DocumentError.\(code): \(message)"
    }

    /// The same as ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }
}
