/// The limits of one key-value store (per account and container), by default Apple's
/// `NSUbiquitousKeyValueStore` limits: 1 MB in all, 1024 keys, keys of at most 64 bytes.
///
/// The store's size is the sum, over its entries, of the key's UTF-8 bytes plus the bytes of the value's
/// ``PropertyListValue/canonicalJSON()``.
///
/// ```swift
/// try KeyValueLimits.apple.check(store: current, puts: ["theme": .string("dark")], removes: ["old"])
/// ```
public struct KeyValueLimits: Hashable, Sendable, Codable {
    /// The most bytes a store may hold, keys and encoded values together.
    public var maximumTotalBytes: Int
    /// The most keys a store may hold.
    public var maximumKeyCount: Int
    /// The most UTF-8 bytes a key may have.
    public var maximumKeyBytes: Int

    /// Apple's limits: 1 MB (1,048,576 bytes), 1024 keys, 64-byte keys.
    public static let apple = KeyValueLimits()

    /// Creates limits; the defaults are Apple's.
    public init(maximumTotalBytes: Int = 1_048_576, maximumKeyCount: Int = 1024, maximumKeyBytes: Int = 64) {
        self.maximumTotalBytes = maximumTotalBytes
        self.maximumKeyCount = maximumKeyCount
        self.maximumKeyBytes = maximumKeyBytes
    }

    /// The bytes one entry counts for.
    public static func size(key: String, value: PropertyListValue) -> Int {
        key.utf8.count + value.canonicalJSON().count
    }

    /// The first limit that applying a batch to `store` would break, or `nil` if the batch fits.
    ///
    /// The batch is applied as a whole: first `removes`, then `puts` (so a key in both ends up put). Limits are
    /// checked in this order: each put key's length (empty keys included), the resulting number of keys, the
    /// resulting total size. A batch that breaks one is refused whole; nothing of it applies.
    /// - Returns: ``ProtocolError/Code/keyValueKeyTooLong``, ``ProtocolError/Code/keyValueTooManyKeys`` or
    ///   ``ProtocolError/Code/keyValueStoreTooLarge``, with a message naming the limit, or `nil`.
    public func violation(
        store: [String: PropertyListValue], puts: [String: PropertyListValue], removes: Set<String> = []
    ) -> ProtocolError? {
        for key in puts.keys.sorted() where key.isEmpty || key.utf8.count > maximumKeyBytes {
            return ProtocolError(
                .keyValueKeyTooLong,
                "key \"\(key.prefix(80))\" is \(key.utf8.count) bytes; keys are 1 to \(maximumKeyBytes) bytes")
        }
        var result = store
        for key in removes { result[key] = nil }
        result.merge(puts) { _, new in new }
        guard result.count <= maximumKeyCount else {
            return ProtocolError(
                .keyValueTooManyKeys, "the store would hold \(result.count) keys; the limit is \(maximumKeyCount)")
        }
        let total = result.reduce(0) { $0 + Self.size(key: $1.key, value: $1.value) }
        guard total <= maximumTotalBytes else {
            return ProtocolError(
                .keyValueStoreTooLarge, "the store would hold \(total) bytes; the limit is \(maximumTotalBytes)")
        }
        return nil
    }

    /// Refuses a batch that would break a limit (see ``violation(store:puts:removes:)``).
    /// - Throws: The first violated limit as a ``ProtocolError``.
    public func check(
        store: [String: PropertyListValue], puts: [String: PropertyListValue], removes: Set<String> = []
    ) throws(ProtocolError) {
        if let error = violation(store: store, puts: puts, removes: removes) { throw error }
    }
}
