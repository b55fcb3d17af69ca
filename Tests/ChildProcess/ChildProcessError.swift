import Glibc

/// Why a child process could not be started, or its standard input or output could not be used.
public struct ChildProcessError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Sendable { case spawnFailed, invalidConfiguration, inputClosed, io }
        private let base: Base
        /// `posix_spawn` failed: the executable is missing or not executable, a file to redirect to could not be
        /// opened, or the system is out of processes or memory.
        public static let spawnFailed = Code(base: .spawnFailed)
        /// The call does not fit how the child was started (no pipe to write or read), or a destination is invalid.
        public static let invalidConfiguration = Code(base: .invalidConfiguration)
        /// The child no longer reads its standard input: it closed it or ended.
        public static let inputClosed = Code(base: .inputClosed)
        /// Reading or writing a pipe failed.
        public static let io = Code(base: .io)
        /// The code's name, such as `spawnFailed`.
        public var description: String { String(describing: base) }
    }

    /// The kind of failure.
    public var code: Code
    /// What happened, with the C library's text for the error number where there is one.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// An error whose message is `what` followed by the C library's text for `number` (an `errno` value).
    init(_ code: Code, _ what: String, errno number: Int32) {
        self.init(code, "\(what): \(String(cString: strerror(number))) (errno \(number))")
    }

    /// `ChildProcessError.<code>: <message>`.
    public var description: String { "ChildProcessError.\(code): \(message)" }
}
