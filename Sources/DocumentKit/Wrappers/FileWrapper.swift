import Foundation

/// Placeholder: a file, directory or symbolic link in memory — the equivalent of Foundation's `FileWrapper`.
open class FileWrapper {
    /// Options for reading.
    public struct ReadingOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let immediate = ReadingOptions(rawValue: 1 << 0)
        public static let withoutMapping = ReadingOptions(rawValue: 1 << 1)
    }
    /// Options for writing.
    public struct WritingOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let atomic = WritingOptions(rawValue: 1 << 0)
        public static let withNameUpdating = WritingOptions(rawValue: 1 << 1)
    }
    /// Reads the item at `url`.
    public init(url: URL, options: ReadingOptions = []) throws {}
    /// Whether this wrapper is a directory.
    open var isDirectory: Bool { false }
    /// Writes the wrapper's contents to `url`.
    open func write(to url: URL, options: WritingOptions = [], originalContentsURL: URL?) throws {}
}
