import Foundation
import UbiquityProtocol

/// Why ``UbiquitousKeyValueStore`` refused a write. Nothing of a refused write is kept.
///
/// ```swift
/// do {
///     try store.setValue(.string("dark"), forKey: "theme")
/// } catch where error.code == .tooManyKeys {
///     // remove keys the app no longer needs, then write again
/// }
/// ```
public struct KeyValueStoreError: Error, Hashable, Sendable, CustomStringConvertible, LocalizedError {
    /// The kind of refusal.
    public enum Code: String, Hashable, Sendable {
        /// The key is empty or longer than 64 UTF-8 bytes.
        case keyTooLong
        /// The store would hold more than 1,024 keys.
        case tooManyKeys
        /// The store would hold more than 1 MB (keys and values together; a single value over it counts too).
        case storeTooLarge
        /// The value is not a property list (`String`, a number, `Bool`, `Date`, `Data`, or arrays and
        /// string-keyed dictionaries of those).
        case notPropertyList
    }

    /// The kind of refusal.
    public var code: Code
    /// What was refused and why, for people.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The store's error for a limit the sync engine or the service named.
    init?(_ error: ProtocolError) {
        switch error.code {
        case .keyValueKeyTooLong: self.init(.keyTooLong, error.message)
        case .keyValueTooManyKeys: self.init(.tooManyKeys, error.message)
        case .keyValueStoreTooLarge: self.init(.storeTooLarge, error.message)
        case .invalidPropertyListValue: self.init(.notPropertyList, error.message)
        default: return nil
        }
    }

    /// Whether the refusal is a quota violation (told as ``UbiquitousKeyValueStore/ChangeReason/quotaViolationChange``).
    var isQuotaViolation: Bool { code == .tooManyKeys || code == .storeTooLarge }

    public var description: String { "\(code.rawValue): \(message)" }
    public var errorDescription: String? { message }
}
