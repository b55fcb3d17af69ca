import UbiquityProtocol

/// The engine's answer to one ``EngineRequest``, carrying the request's ``id``.
///
/// On the wire it is one JSON object on one line, the kind of answer under `"result"`:
///
/// ```json
/// {"id":1,"result":"items","items":[…],"transfers":{"<item id>":{"direction":"download","completed":0,"total":9}}}
/// {"id":4,"result":"transfers","transfers":{}}
/// {"id":2,"result":"item","item":{…}}
/// {"id":5,"result":"versions","current":"<version id>","versions":[…]}
/// {"id":3,"result":"done"}
/// {"id":6,"result":"health","health":{"lastSucceeded":1796000000000}}
/// {"id":9,"result":"error","error":{"code":"pathComponentDot","message":"…"}}
/// ```
///
/// `item` is absent when the engine knows no item at the path, `current` when the item has no current version.
/// An error answer to a frame whose id could not be read has no `id`.
public struct EngineResponse: Hashable, Sendable, Codable {
    /// What the request came to.
    public enum Outcome: Hashable, Sendable {
        /// Every item the engine knows, and the transfers under way by item (answers ``EngineRequest/Operation/items``).
        case items([LocalItem], transfers: [ItemID: ItemTransfer])
        /// The transfers under way by item (answers ``EngineRequest/Operation/transfers``).
        case transfers([ItemID: ItemTransfer])
        /// The item at the path, `nil` when there is none (answers ``EngineRequest/Operation/item(_:)``).
        case item(LocalItem?)
        /// The item's current version and its kept versions, newest first
        /// (answers ``EngineRequest/Operation/versions(_:)``).
        case versions(current: VersionID?, [VersionRecord])
        /// Where the asked-for content is on this machine (answers ``EngineRequest/Operation/contents(_:version:)``).
        case file(String)
        /// The key-value store as the device sees it (answers ``EngineRequest/Operation/keyValues``).
        case keyValues([String: PropertyListValue])
        /// How the rounds have gone (answers ``EngineRequest/Operation/health``).
        case health(SyncHealth)
        /// The request was carried out (download, evict, resolve, syncNow, subscribe).
        case done
        /// The request failed, or could not be read; nothing was done.
        case failure(ProtocolError)
    }

    /// The id of the request answered; `nil` when the frame's id could not be read.
    public var id: UInt64?
    /// What the request came to.
    public var outcome: Outcome

    /// Creates a response.
    public init(id: UInt64?, _ outcome: Outcome) {
        self.id = id
        self.outcome = outcome
    }

    enum CodingKeys: String, CodingKey {
        case id, result, items, transfers, item, current, versions, error, path, values, health
    }

    /// Decodes a response.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(UInt64.self, forKey: .id)
        let name = try container.decode(String.self, forKey: .result)
        switch name {
        case "items":
            outcome = .items(
                try container.decode([LocalItem].self, forKey: .items), transfers: try Self.transfers(in: container))
        case "transfers": outcome = .transfers(try Self.transfers(in: container))
        case "item": outcome = .item(try container.decodeIfPresent(LocalItem.self, forKey: .item))
        case "versions":
            outcome = .versions(
                current: try container.decodeIfPresent(VersionID.self, forKey: .current),
                try container.decode([VersionRecord].self, forKey: .versions))
        case "file": outcome = .file(try container.decode(String.self, forKey: .path))
        case "keyValues":
            outcome = .keyValues(try container.decode([String: PropertyListValue].self, forKey: .values))
        case "health": outcome = .health(try container.decode(SyncHealth.self, forKey: .health))
        case "done": outcome = .done
        case "error": outcome = .failure(try container.decode(ProtocolError.self, forKey: .error))
        default: throw ProtocolError(.malformedRequest, "unknown result \"\(name.prefix(100))\"")
        }
    }

    private static func transfers(in container: KeyedDecodingContainer<CodingKeys>) throws -> [ItemID: ItemTransfer] {
        var byItem: [ItemID: ItemTransfer] = [:]
        for (id, transfer) in try container.decode([String: ItemTransfer].self, forKey: .transfers) {
            byItem[try ItemID(id)] = transfer
        }
        return byItem
    }

    /// Keyed by the id's string: JSON objects have string keys.
    private static func encode(
        _ transfers: [ItemID: ItemTransfer], in container: inout KeyedEncodingContainer<CodingKeys>
    ) throws {
        try container.encode(
            Dictionary(uniqueKeysWithValues: transfers.map { ($0.key.string, $0.value) }), forKey: .transfers)
    }

    /// Encodes the response in its wire form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(id, forKey: .id)
        switch outcome {
        case .items(let items, let transfers):
            try container.encode("items", forKey: .result)
            try container.encode(items, forKey: .items)
            try Self.encode(transfers, in: &container)
        case .transfers(let transfers):
            try container.encode("transfers", forKey: .result)
            try Self.encode(transfers, in: &container)
        case .item(let item):
            try container.encode("item", forKey: .result)
            try container.encodeIfPresent(item, forKey: .item)
        case .versions(let current, let versions):
            try container.encode("versions", forKey: .result)
            try container.encodeIfPresent(current, forKey: .current)
            try container.encode(versions, forKey: .versions)
        case .file(let path):
            try container.encode("file", forKey: .result)
            try container.encode(path, forKey: .path)
        case .keyValues(let values):
            try container.encode("keyValues", forKey: .result)
            try container.encode(values, forKey: .values)
        case .health(let health):
            try container.encode("health", forKey: .result)
            try container.encode(health, forKey: .health)
        case .done:
            try container.encode("done", forKey: .result)
        case .failure(let error):
            try container.encode("error", forKey: .result)
            try container.encode(error, forKey: .error)
        }
    }
}
