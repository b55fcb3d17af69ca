import Foundation

/// Why coordinated access failed.
///
/// Bridges to `NSError` (domain ``errorDomain``) for the `error:` out-parameter forms of ``FileCoordinator``.
public struct FileCoordinationError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Int, Sendable {
            case cancelled = 1, timedOut, presenterTimedOut, wouldDeadlock, invalidURL, io, presenterFailed
        }
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
        /// A presenter answered a request to save or to accommodate a deletion with an error.
        public static let presenterFailed = Code(base: .presenterFailed)
        /// The code's name, such as `timedOut`.
        public var description: String { String(describing: base) }
        /// The code's number in the `NSError` bridge (1 = cancelled, 2 = timedOut, 3 = presenterTimedOut,
        /// 4 = wouldDeadlock, 5 = invalidURL, 6 = io, 7 = presenterFailed).
        public var rawValue: Int { base.rawValue }
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
    /// `FileCoordinationError.<code>: <message>`.
    public var description: String { "FileCoordinationError.\(code): \(message)" }
}

extension FileCoordinationError: CustomNSError, LocalizedError {
    /// `DocumentKit.FileCoordinationError`, the domain of the bridged `NSError`.
    public static var errorDomain: String { "DocumentKit.FileCoordinationError" }
    /// ``Code/rawValue``.
    public var errorCode: Int { code.rawValue }
    /// The message as `NSLocalizedDescriptionKey`.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }
    /// The message.
    public var errorDescription: String? { message }

    /// The error as an `NSError` in ``errorDomain`` whose `localizedDescription` is the message.
    public var nsError: NSError {
        NSError(domain: Self.errorDomain, code: errorCode, userInfo: errorUserInfo)
    }
}
