import Foundation
import UbiquityProtocol

/// Why the container's key-value store changed, as Apple's `NSUbiquitousKeyValueStoreChangeReasonKey` says it.
public enum KeyValueChangeReason: String, Hashable, Sendable, Codable {
    /// Another device changed the values (`NSUbiquitousKeyValueStoreServerChange`).
    case serverChange
    /// The first values heard from the service on this device (`NSUbiquitousKeyValueStoreInitialSyncChange`).
    case initialSyncChange
    /// Writes went over the store's limits and were dropped (`NSUbiquitousKeyValueStoreQuotaViolationChange`).
    case quotaViolationChange
    /// The signed-in account changed (`NSUbiquitousKeyValueStoreAccountChange`).
    case accountChange
    /// A process on this device wrote values (not one of Apple's reasons: it lets other processes of the device
    /// see the write at once).
    case localChange
}

extension ContainerSync {
    /// The state database key of the key-value store's position in the service's feed.
    static let keyValueTokenKey = "keyValueToken"

    /// The container's key-value store as this device sees it: the service's values with this device's writes
    /// on top (those not yet sent included).
    public func keyValues() throws -> [String: PropertyListValue] { try state.keyValues() }

    /// Writes values (and removes keys) at once on this device; they go to the service with the next round, and
    /// the later write of a key wins everywhere. Listeners hear of a ``KeyValueChangeReason/localChange``.
    /// - Throws: ``ProtocolError/Code/keyValueKeyTooLong`` (a key over 64 bytes, or empty),
    ///   ``ProtocolError/Code/keyValueTooManyKeys`` (over 1,024 keys) or ``ProtocolError/Code/keyValueStoreTooLarge``
    ///   (over 1 MB): nothing is written, and listeners hear of a ``KeyValueChangeReason/quotaViolationChange``.
    public func setKeyValues(_ puts: [String: PropertyListValue], removing removes: Set<String> = []) throws {
        let keys = Set(puts.keys).union(removes).sorted()
        do {
            try state.writeKeyValues(puts, removing: removes, at: Date(), limits: configuration.keyValueLimits)
        } catch let error as ProtocolError {
            if error.code != .keyValueKeyTooLong { hub.send(.keyValuesChanged(keys, .quotaViolationChange)) }
            throw error
        }
        if !keys.isEmpty { hub.send(.keyValuesChanged(keys, .localChange)) }
    }

    /// Sends this device's pending writes, then reads the service's changes since the last round. Writes the
    /// service refuses for the store's limits (another device filled it meanwhile) are dropped, and the keys
    /// take the service's values again: listeners hear of a quota violation.
    func syncKeyValues() async throws {
        var token = try state.value(forKey: Self.keyValueTokenKey).map(ChangeToken.init)
        let pending = try state.pendingKeyValueWrites()
        if !pending.isEmpty {
            do {
                _ = try await service.apply(KeyValueBatch(writes: pending), in: container)
                try state.settleKeyValueWrites(pending)
            } catch let error as ProtocolError
                where [.keyValueTooManyKeys, .keyValueStoreTooLarge, .keyValueKeyTooLong].contains(error.code)
            {
                logger.notice("key-value writes over the store's limits were dropped", metadata: ["error": "\(error)"])
                try state.dropKeyValueWrites(pending)
                hub.send(.keyValuesChanged(pending.map(\.key), .quotaViolationChange))
                token = nil  // the whole store again: the dropped keys take the service's values
            }
        }
        let changes = try await service.keyValues(in: container, since: token)
        let changed = try state.applyKeyValueEntries(changes.entries, whole: token == nil)
        let first = try state.value(forKey: Self.keyValueTokenKey) == nil
        try state.setValue(changes.token.string, forKey: Self.keyValueTokenKey)
        if !changed.isEmpty { hub.send(.keyValuesChanged(changed, first ? .initialSyncChange : .serverChange)) }
    }
}
