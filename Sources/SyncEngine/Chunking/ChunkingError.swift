/// Why chunking refused a configuration or could not read its input.
///
/// ```swift
/// do { _ = try FastCDC(.init(minimumSize: 4096, averageSize: 3000, maximumSize: 8192)) }
/// catch where error.code == .invalidConfiguration { print(error.message) }
/// ```
public struct ChunkingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    public var code: Code
    /// What happened, in words, naming the offending value.
    public var message: String

    /// Creates an error.
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: What happened.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "ChunkingError.\(code): \(message)" }

    /// The kind of a ``ChunkingError``.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidConfiguration, readFailed
        }

        private let base: Base

        private init(_ base: Base) { self.base = base }

        public var description: String { base.rawValue }

        /// A ``FastCDC/Configuration`` breaks one of its rules (sizes out of order, an average that is not a power
        /// of two, a normalisation level the average cannot carry).
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// Reading the input failed; the message carries the system's reason.
        public static let readFailed = Code(.readFailed)
    }
}
