import Foundation
import UbiquityProtocol

/// Apple's accessors. A setter whose write is refused (a value that is not a property list, a key that is empty or
/// over 64 bytes, a write over the store's limits) changes nothing and does not trap: the reason is in
/// ``UbiquitousKeyValueStore/lastError`` and the log, and a write over the limits is told as a quota violation.
extension UbiquitousKeyValueStore {
    /// The value of `key` as a Foundation object (`String`, `Int64`, `Double`, `Bool`, `Date`, `Data`, arrays and
    /// dictionaries of those); `nil` when there is none.
    public func object(forKey key: String) -> Any? { value(forKey: key)?.foundation }

    /// Writes a property-list object under `key`; `nil` removes the key.
    public func set(_ value: Any?, forKey key: String) {
        guard let value else { return removeObject(forKey: key) }
        guard let converted = PropertyListValue(foundation: value) else {
            let error = ProtocolError(
                .invalidPropertyListValue,
                "the value for \"\(key.prefix(80))\" is not a property list (\(type(of: value)))")
            state.withLock { $0.lastError = error }
            logger.warning("a key-value write was refused", metadata: ["error": "\(error)"])
            return
        }
        try? write([key: converted])
    }

    /// Writes a string (`nil` removes the key).
    public func set(_ value: String?, forKey key: String) { try? write([key: value.map { .string($0) }]) }
    /// Writes bytes (`nil` removes the key).
    public func set(_ value: Data?, forKey key: String) { try? write([key: value.map { .data($0) }]) }
    /// Writes an array of property-list objects (`nil` removes the key).
    public func set(_ value: [Any]?, forKey key: String) { set(value as Any?, forKey: key) }
    /// Writes a dictionary of property-list objects (`nil` removes the key).
    public func set(_ value: [String: Any]?, forKey key: String) { set(value as Any?, forKey: key) }
    /// Writes a 64-bit integer (Apple's `set(_:forKey:)` for `long long`).
    public func set(_ value: Int64, forKey key: String) { try? write([key: .integer(value)]) }
    /// Writes a double.
    public func set(_ value: Double, forKey key: String) { try? write([key: .double(value)]) }
    /// Writes a Boolean.
    public func set(_ value: Bool, forKey key: String) { try? write([key: .bool(value)]) }

    /// Removes `key`.
    public func removeObject(forKey key: String) { try? write([key: nil]) }

    /// The string under `key`, or `nil`.
    public func string(forKey key: String) -> String? {
        if case .string(let value) = value(forKey: key) { return value }
        return nil
    }

    /// The array under `key`, or `nil`.
    public func array(forKey key: String) -> [Any]? {
        if case .array(let values) = value(forKey: key) { return values.map(\.foundation) }
        return nil
    }

    /// The dictionary under `key`, or `nil`.
    public func dictionary(forKey key: String) -> [String: Any]? {
        if case .dictionary(let values) = value(forKey: key) { return values.mapValues(\.foundation) }
        return nil
    }

    /// The bytes under `key`, or `nil`.
    public func data(forKey key: String) -> Data? {
        if case .data(let value) = value(forKey: key) { return value }
        return nil
    }

    /// The integer under `key` (a double truncated, a Boolean as 0 or 1), or 0.
    public func longLong(forKey key: String) -> Int64 {
        switch value(forKey: key) {
        case .integer(let value): value
        case .double(let value) where value.isFinite && abs(value) < 9.2e18: Int64(value)
        case .bool(let value): value ? 1 : 0
        default: 0
        }
    }

    /// The number under `key` as a double, or 0.
    public func double(forKey key: String) -> Double {
        switch value(forKey: key) {
        case .double(let value): value
        case .integer(let value): Double(value)
        case .bool(let value): value ? 1 : 0
        default: 0
        }
    }

    /// The Boolean under `key` (a non-zero number is `true`), or `false`.
    public func bool(forKey key: String) -> Bool {
        switch value(forKey: key) {
        case .bool(let value): value
        case .integer(let value): value != 0
        case .double(let value): value != 0
        default: false
        }
    }

    /// Every key and value as Foundation objects.
    public var dictionaryRepresentation: [String: Any] { values.mapValues(\.foundation) }
}
