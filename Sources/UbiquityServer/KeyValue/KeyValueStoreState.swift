import Foundation
import UbiquityProtocol

/// One container's key-value store on the service: the pure state machine behind batched puts and removes.
///
/// Last writer wins per key, by the client's timestamp (compared at the wire's microsecond precision), ties broken
/// by the greater device id — so every order of arrival ends in the same store. A remove leaves a tombstone with
/// its timestamp, so an older put that arrives later does not bring the key back. Apple's limits
/// (``KeyValueLimits``) apply to the store a batch would leave: a batch that breaks one is refused whole and changes
/// nothing. Every applied write gets the store's next sequence number, which is what a change token counts.
public struct KeyValueStoreState: Hashable, Sendable {
    /// A key's latest write.
    public struct Entry: Hashable, Sendable {
        /// The value; `nil` for a removed key (a tombstone).
        public var value: PropertyListValue?
        /// The client's timestamp of the write.
        public var timestamp: Date
        /// The device that wrote it.
        public var device: DeviceID
        /// The store's sequence number when it was applied.
        public var sequence: UInt64

        /// Creates an entry.
        public init(value: PropertyListValue?, timestamp: Date, device: DeviceID, sequence: UInt64) {
            self.value = value
            self.timestamp = timestamp
            self.device = device
            self.sequence = sequence
        }
    }

    /// One put (a value) or remove (`nil`) in a batch.
    public struct Write: Hashable, Sendable {
        /// The key.
        public var key: String
        /// The new value, or `nil` to remove the key.
        public var value: PropertyListValue?
        /// When the device made the change.
        public var timestamp: Date

        /// Creates a write.
        public init(key: String, value: PropertyListValue?, timestamp: Date) {
            self.key = key
            self.value = value
            self.timestamp = timestamp
        }
    }

    /// The limits every batch is checked against.
    public let limits: KeyValueLimits
    /// Every key's latest write, tombstones included.
    public private(set) var entries: [String: Entry] = [:]
    /// The sequence number of the latest applied write; 0 for an empty store.
    public private(set) var sequence: UInt64 = 0

    /// An empty store checked against `limits` (Apple's by default).
    public init(limits: KeyValueLimits = .apple) {
        self.limits = limits
    }

    /// A store as persisted: its entries (tombstones included) and its latest sequence number.
    public init(limits: KeyValueLimits, entries: [String: Entry], sequence: UInt64) {
        self.limits = limits
        self.entries = entries
        self.sequence = sequence
    }

    /// The store's values (tombstones left out).
    public var values: [String: PropertyListValue] {
        entries.compactMapValues(\.value)
    }

    /// Applies `writes` from `device`: each wins over the key's current write if it is later (ties to the greater
    /// device id). Returns the keys whose value changed, in order.
    ///
    /// - Throws: The first limit the resulting store would break (``ProtocolError/Code/keyValueKeyTooLong``,
    ///   ``ProtocolError/Code/keyValueTooManyKeys``, ``ProtocolError/Code/keyValueStoreTooLarge``); nothing changes.
    public mutating func apply(_ writes: [Write], from device: DeviceID) throws(ProtocolError) -> [String] {
        var winners: [String: Write] = [:]
        for write in writes where wins(write, from: device, over: winners[write.key]) {
            winners[write.key] = write
        }
        let puts = winners.values.reduce(into: [String: PropertyListValue]()) { puts, write in
            if let value = write.value { puts[write.key] = value }
        }
        let removes = Set(winners.values.filter { $0.value == nil }.map(\.key))
        // Every key of the batch is checked, also of writes that lose, so a bad key is always refused.
        if let bad = writes.first(where: { $0.key.isEmpty || $0.key.utf8.count > limits.maximumKeyBytes }) {
            throw ProtocolError(
                .keyValueKeyTooLong,
                "key \"\(bad.key.prefix(80))\" is \(bad.key.utf8.count) bytes; keys are 1 to \(limits.maximumKeyBytes) bytes"
            )
        }
        try limits.check(store: values, puts: puts, removes: removes)

        var changed: [String] = []
        for key in winners.keys.sorted() {
            let write = winners[key]!
            sequence += 1
            if entries[key]?.value != write.value { changed.append(key) }
            entries[key] = Entry(value: write.value, timestamp: write.timestamp, device: device, sequence: sequence)
        }
        return changed
    }

    /// The writes applied after `sequence` (tombstones included, so a device learns of removes), oldest first.
    public func changes(since sequence: UInt64) -> [(key: String, entry: Entry)] {
        entries.filter { $0.value.sequence > sequence }.sorted { $0.value.sequence < $1.value.sequence }
            .map { (key: $0.key, entry: $0.value) }
    }

    /// Whether `write` from `device` wins over the key's stored write and over `pending`, an earlier write of the
    /// same batch.
    private func wins(_ write: Write, from device: DeviceID, over pending: Write?) -> Bool {
        let time = WireTimestamp.microseconds(of: write.timestamp)
        if let pending, WireTimestamp.microseconds(of: pending.timestamp) > time { return false }
        guard let stored = entries[write.key] else { return true }
        let storedTime = WireTimestamp.microseconds(of: stored.timestamp)
        return time != storedTime ? time > storedTime : device > stored.device
    }
}
