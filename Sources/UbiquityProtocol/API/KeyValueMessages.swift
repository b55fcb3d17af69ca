import Foundation

/// One put (a value) or remove (no value) of a key-value batch, with the time the device made it.
public struct KeyValueWrite: Hashable, Sendable, Codable {
    /// The key.
    public var key: String
    /// The new value; `nil` removes the key.
    public var value: PropertyListValue?
    /// When the device made the change; the later write of a key wins.
    public var timestamp: Date

    /// Creates a write.
    public init(key: String, value: PropertyListValue?, timestamp: Date) {
        self.key = key
        self.value = value
        self.timestamp = timestamp
    }

    private enum CodingKeys: String, CodingKey { case key, value, timestamp }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        key = try container.decode(String.self, forKey: .key)
        value = try container.decodeIfPresent(PropertyListValue.self, forKey: .value)
        timestamp = try WireTimestamp.date(from: container.decode(String.self, forKey: .timestamp))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key, forKey: .key)
        try container.encodeIfPresent(value, forKey: .value)
        try container.encode(WireTimestamp.string(from: timestamp), forKey: .timestamp)
    }
}

/// `POST /v1/containers/{container}/kv`: a batch of writes, applied whole or refused whole.
public struct KeyValueBatch: Hashable, Sendable, Codable {
    /// The writes.
    public var writes: [KeyValueWrite]

    /// Creates a batch.
    public init(writes: [KeyValueWrite]) { self.writes = writes }
}

/// A key's latest write as the store holds it: a value, or a removal (tombstone).
public struct KeyValueEntry: Hashable, Sendable, Codable {
    /// The key.
    public var key: String
    /// The value; `nil` when the key was removed.
    public var value: PropertyListValue?
    /// The winning write's timestamp.
    public var timestamp: Date
    /// The device that wrote it.
    public var device: DeviceID

    /// Creates an entry.
    public init(key: String, value: PropertyListValue?, timestamp: Date, device: DeviceID) {
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.device = device
    }

    private enum CodingKeys: String, CodingKey { case key, value, timestamp, device }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        key = try container.decode(String.self, forKey: .key)
        value = try container.decodeIfPresent(PropertyListValue.self, forKey: .value)
        timestamp = try WireTimestamp.date(from: container.decode(String.self, forKey: .timestamp))
        device = try container.decode(DeviceID.self, forKey: .device)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key, forKey: .key)
        try container.encodeIfPresent(value, forKey: .value)
        try container.encode(WireTimestamp.string(from: timestamp), forKey: .timestamp)
        try container.encode(device, forKey: .device)
    }
}

/// `GET /v1/containers/{container}/kv[?since=TOKEN]`: the whole store (without `since`, tombstones left out) or
/// the writes after a token (tombstones included, so removes reach the device).
public struct KeyValueChanges: Hashable, Sendable, Codable {
    /// The entries, oldest write first.
    public var entries: [KeyValueEntry]
    /// The store's position after these entries.
    public var token: ChangeToken

    /// Creates an answer.
    public init(entries: [KeyValueEntry], token: ChangeToken) {
        self.entries = entries
        self.token = token
    }
}

/// The answer to a ``KeyValueBatch``.
public struct KeyValueBatchResponse: Hashable, Sendable, Codable {
    /// The keys whose value changed, in order.
    public var changedKeys: [String]
    /// The store's position after the batch.
    public var token: ChangeToken

    /// Creates an answer.
    public init(changedKeys: [String], token: ChangeToken) {
        self.changedKeys = changedKeys
        self.token = token
    }
}
