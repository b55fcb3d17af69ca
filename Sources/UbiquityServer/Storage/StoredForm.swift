import Foundation
import UbiquityProtocol

/// How metadata drivers store records and times, and the rules they share about item operations.
enum StoredForm {
    /// A record as stored text: JSON with sorted keys, so equal records store equal text (the bytes Foundation's
    /// `JSONEncoder` writes with `.sortedKeys` and `.withoutEscapingSlashes`, written faster).
    static func encode(_ value: some Encodable) throws -> String {
        String(decoding: try WireJSONEncoder(sortsKeys: true).encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try WireJSONDecoder().decode(type, from: text)
    }

    /// A time as stored: whole microseconds, as the wire carries it.
    static func microseconds(_ date: Date) -> Int64 { WireTimestamp.microseconds(of: date) }
    static func date(_ microseconds: Int64) -> Date { WireTimestamp.date(microseconds: microseconds) }

    /// A new container's epoch: what makes its feed tokens unlike those of an earlier container of the same name.
    static func newEpoch() -> String {
        String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(16))
    }
}

/// A container's row: its epoch and the latest sequence numbers of its feed and key-value store.
struct ContainerState: Sendable {
    var epoch: String
    var feedSequence: Int64
    var keyValueSequence: Int64

    /// A container nothing was written to yet.
    static let empty = ContainerState(epoch: "0", feedSequence: 0, keyValueSequence: 0)
}

/// An item as a driver loads it: its record and its versions.
struct StoredItem: Sendable {
    var record: ItemRecord
    var versions: ItemVersions
}

/// The result of one item operation, before its feed token is known.
struct ItemChange: Sendable {
    var changes: [Change]
    var outcome: CommitOutcome? = nil
    var version: VersionRecord? = nil
}

extension VersionRecord {
    /// Refuses a version that is not of `item` or whose content does not fit the item's kind.
    func check(fits kind: ItemKind, of item: ItemID) throws(ProtocolError) {
        guard itemID == item else {
            throw ProtocolError(.invalidRecord, "version \(id) names item \(itemID), not \(item)")
        }
        switch (kind, manifest) {
        case (.file, .file), (.package, .package): return
        case (.directory, _): throw ProtocolError(.kindMismatch, "a directory has no content versions")
        default:
            throw ProtocolError(.kindMismatch, "version \(id) does not hold the content of a \(kind.rawValue)")
        }
    }
}
