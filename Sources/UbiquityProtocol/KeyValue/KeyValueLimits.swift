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

    /// The bytes a whole store counts for.
    public static func size(of store: [String: PropertyListValue]) -> Int {
        store.reduce(0) { $0 + size(key: $1.key, value: $1.value) }
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
        violation(store: store, bytes: Self.size(of: store), puts: puts, removes: removes).error
    }

    /// ``violation(store:puts:removes:)`` for a store whose size (``size(of:)``) the caller keeps, in time
    /// proportional to the batch rather than the store; also the store's size once the batch applied (its size now
    /// when refused).
    public func violation(
        store: [String: PropertyListValue], bytes: Int, puts: [String: PropertyListValue],
        removes: Set<String> = []
    ) -> (error: ProtocolError?, bytes: Int) {
        for key in puts.keys.sorted() where key.isEmpty || key.utf8.count > maximumKeyBytes {
            let error = ProtocolError(
                .keyValueKeyTooLong,
                "key \"\(key.prefix(80))\" is \(key.utf8.count) bytes; keys are 1 to \(maximumKeyBytes) bytes")
            return (error, bytes)
        }
        var count = store.count
        var total = bytes
        for key in removes where puts[key] == nil {
            guard let old = store[key] else { continue }
            count -= 1
            total -= Self.size(key: key, value: old)
        }
        for (key, value) in puts {
            if let old = store[key] {
                total -= Self.size(key: key, value: old)
            } else {
                count += 1
            }
            total += Self.size(key: key, value: value)
        }
        guard count <= maximumKeyCount else {
            let error = ProtocolError(
                .keyValueTooManyKeys, "the store would hold \(count) keys; the limit is \(maximumKeyCount)")
            return (error, bytes)
        }
        guard total <= maximumTotalBytes else {
            let error = ProtocolError(
                .keyValueStoreTooLarge, "the store would hold \(total) bytes; the limit is \(maximumTotalBytes)")
            return (error, bytes)
        }
        return (nil, total)
    }

    /// Refuses a batch that would break a limit (see ``violation(store:puts:removes:)``).
    /// - Throws: The first violated limit as a ``ProtocolError``.
    public func check(
        store: [String: PropertyListValue], puts: [String: PropertyListValue], removes: Set<String> = []
    ) throws(ProtocolError) {
        if let error = violation(store: store, puts: puts, removes: removes) { throw error }
    }
}
