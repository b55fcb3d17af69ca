import Foundation

/// An error thrown by ``FileWrapper`` and ``SafeFileWriter`` when reading or writing fails.
///
/// Every error carries a ``Code`` to switch on, a human-readable ``message``, the location it concerns
/// (if any) and, for failed system calls, the underlying `POSIXError`.
///
/// ```swift
/// do {
///     try wrapper.write(to: url, options: .atomic, originalContentsURL: nil)
/// } catch let error as FileWrapperError where error.code == .invalidFilename {
///     print("refused:", error.message)
/// }
/// ```
public struct FileWrapperError: Error, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case invalidFilename
            case invalidSymbolicLinkDestination
            case invalidStructure
            case invalidURL
            case noSuchFile
            case unsupportedFileType
            case readFailed
            case writeFailed
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// A member name (a key, a preferred filename or a name found on disk) is empty, `.`, `..`,
        /// contains `/` or NUL, is longer than 255 bytes of UTF-8, or is not valid UTF-8.
        public static let invalidFilename = Code(.invalidFilename)
        /// A symbolic link destination is empty or contains NUL.
        public static let invalidSymbolicLinkDestination = Code(.invalidSymbolicLinkDestination)
        /// The wrapper tree contains itself (a directory wrapper is its own descendant).
        public static let invalidStructure = Code(.invalidStructure)
        /// The URL is not a file URL or names no item (for example `/`).
        public static let invalidURL = Code(.invalidURL)
        /// Nothing exists at the location being read.
        public static let noSuchFile = Code(.noSuchFile)
        /// The item is neither a regular file, a directory nor a symbolic link (a socket, FIFO or device).
        public static let unsupportedFileType = Code(.unsupportedFileType)
        /// Reading from disk failed.
        public static let readFailed = Code(.readFailed)
        /// Writing to disk failed.
        public static let writeFailed = Code(.writeFailed)

        /// The name of the code, such as `invalidFilename`.
        public var description: String {
            switch base {
            case .invalidFilename: "invalidFilename"
            case .invalidSymbolicLinkDestination: "invalidSymbolicLinkDestination"
            case .invalidStructure: "invalidStructure"
            case .invalidURL: "invalidURL"
            case .noSuchFile: "noSuchFile"
            case .unsupportedFileType: "unsupportedFileType"
            case .readFailed: "readFailed"
            case .writeFailed: "writeFailed"
            }
        }
    }

    /// The kind of failure.
    public var code: Code
    /// What went wrong, for people.
    public var message: String
    /// The file or directory concerned, if any.
    public var url: URL?
    /// The error reported by the system, typically a `POSIXError`, if any.
    public var underlyingError: (any Error)?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: What went wrong, for people.
    ///   - url: The file or directory concerned.
    ///   - underlyingError: The error reported by the system.
    public init(code: Code, message: String, url: URL? = nil, underlyingError: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.url = url
        self.underlyingError = underlyingError
    }

    /// A one-line summary: code, message, path and underlying error.
    public var description: String {
        var text = "FileWrapperError.\(code): \(message)"
        if let url { text += " (\(url.path))" }
        if let underlyingError { text += ": \(underlyingError)" }
        return text
    }
}

extension FileWrapperError {
    /// An error for a failed system call, reading `errno` now.
    static func posix(_ code: Code, _ operation: String, url: URL?, errno number: Int32 = errno) -> Self {
        let posixCode = POSIXErrorCode(rawValue: number) ?? .EIO
        let error = POSIXError(posixCode)
        if posixCode == .ENOENT, code == .readFailed {
            return Self(
                code: .noSuchFile, message: "\(operation) failed: no such file", url: url, underlyingError: error)
        }
        return Self(
            code: code,
            message: "\(operation) failed: \(String(cString: strerror(number)))",
            url: url,
            underlyingError: error
        )
    }
}
