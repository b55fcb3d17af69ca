import UbiquityProtocol

/// One request to the running engine over its socket, answered by an ``EngineResponse`` with the same ``id``.
///
/// On the wire it is one JSON object on one line, the operation under `"op"`:
///
/// ```json
/// {"id":1,"op":"items"}
/// {"id":2,"op":"item","path":"Documents/List.grocery"}
/// {"id":3,"op":"download","path":"Documents/Big.pdf"}
/// {"id":4,"op":"evict","path":"Documents/Big.pdf"}
/// {"id":5,"op":"versions","path":"Documents/List.grocery"}
/// {"id":6,"op":"resolve","path":"Documents/List.grocery","keep":"6f1c…"}
/// {"id":9,"op":"contents","path":"Documents/List.grocery","version":"6f1c…"}
/// {"id":12,"op":"otherVersions","path":"Documents/List.grocery"}
/// {"id":13,"op":"changeVersions","path":"Documents/List.grocery","operations":[{"remove":{"_0":"6f1c…"}}]}
/// {"id":14,"op":"changeVersionsNow","path":"Documents/List.grocery","item":"58df…","change":{"remove":{"_0":"6f1c…"}}}
/// {"id":10,"op":"keyValues"}
/// {"id":11,"op":"setKeyValues","puts":{"sortOrder":{"type":"string","value":"name"}},"removes":["old"]}
/// {"id":7,"op":"syncNow"}
/// {"id":15,"op":"health"}
/// {"id":8,"op":"subscribe"}
/// ```
///
/// Paths are ``ItemPath``s, checked as they are decoded: a hostile path is refused with its own code.
public struct EngineRequest: Hashable, Sendable, Codable {
    /// What the engine is asked to do; each maps onto ``ContainerSync``'s API of the same name.
    public enum Operation: Hashable, Sendable {
        /// Every item the engine knows, and the transfers under way (``ContainerSync/items()``,
        /// ``ContainerSync/currentTransfers()``).
        case items
        /// The transfers under way (``ContainerSync/currentTransfers()``): what an app asks for beside the items it
        /// reads from the state database itself (``LocalStateStore/snapshotItems()``).
        case transfers
        /// The item at a path, if the engine knows one (``ContainerSync/item(at:)``).
        case item(ItemPath)
        /// Download the current content of the item at a path (``ContainerSync/download(_:)``).
        case download(ItemPath)
        /// Drop the local content of the item at a path, keeping a placeholder (``ContainerSync/evict(_:)``).
        case evict(ItemPath)
        /// The kept versions of the item at a path (``ContainerSync/versions(of:)``).
        case versions(ItemPath)
        /// Resolve the item's conflicts keeping a version, `nil` for the current one
        /// (``ContainerSync/resolve(_:keeping:)``).
        case resolve(ItemPath, keeping: VersionID?)
        /// The local copy of a version of the item at a path, downloaded into `.ubiquity/versions/` the first time
        /// (``ContainerSync/contents(of:at:)``).
        case contents(ItemPath, version: VersionID)
        /// The container's key-value store as this device sees it (``ContainerSync/keyValues()``).
        case keyValues
        /// The versions of the item at a path other than the current one, as the engine last heard them
        /// (``ContainerSync/otherVersions(of:)``).
        case otherVersions(ItemPath)
        /// Change the item's versions one step at a time (``ContainerSync/changeVersions(of:_:)``).
        case changeVersions(ItemPath, [VersionOperation])
        /// Change the item's versions here at once and queue the same for the service
        /// (``ContainerSync/changeVersionsNow(of:item:_:)``).
        case changeVersionsNow(ItemPath, item: ItemID, VersionChange)
        /// Write values and remove keys of the key-value store (``ContainerSync/setKeyValues(_:removing:)``).
        case setKeyValues([String: PropertyListValue], removing: Set<String>)
        /// Run a sync round now and answer when it is over (``ContainerSync/syncOnce()``).
        case syncNow
        /// How the rounds have gone (``ContainerSync/health()``).
        case health
        /// From the answer on, push every ``SyncEvent`` to this connection as it happens.
        case subscribe
    }

    /// Chosen by the client and echoed in the response, so requests can be pipelined.
    public var id: UInt64
    /// What to do.
    public var operation: Operation

    /// Creates a request.
    public init(id: UInt64, _ operation: Operation) {
        self.id = id
        self.operation = operation
    }

    enum CodingKeys: String, CodingKey {
        case id, op, path, keep, version, puts, removes, operations, item, change
    }

    /// Decodes a request.
    /// - Throws: ``ProtocolError`` with ``ProtocolError/Code/malformedRequest`` for an unknown operation, or the
    ///   code of a path or version id that breaks a rule; `DecodingError` for a missing or mistyped field.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UInt64.self, forKey: .id)
        let name = try container.decode(String.self, forKey: .op)
        func path() throws -> ItemPath { try container.decode(ItemPath.self, forKey: .path) }
        switch name {
        case "items": operation = .items
        case "transfers": operation = .transfers
        case "item": operation = .item(try path())
        case "download": operation = .download(try path())
        case "evict": operation = .evict(try path())
        case "versions": operation = .versions(try path())
        case "resolve":
            operation = .resolve(try path(), keeping: try container.decodeIfPresent(VersionID.self, forKey: .keep))
        case "contents":
            operation = .contents(try path(), version: try container.decode(VersionID.self, forKey: .version))
        case "otherVersions": operation = .otherVersions(try path())
        case "changeVersions":
            operation = .changeVersions(
                try path(), try container.decode([VersionOperation].self, forKey: .operations))
        case "changeVersionsNow":
            operation = .changeVersionsNow(
                try path(), item: try container.decode(ItemID.self, forKey: .item),
                try container.decode(VersionChange.self, forKey: .change))
        case "keyValues": operation = .keyValues
        case "setKeyValues":
            operation = .setKeyValues(
                try container.decodeIfPresent([String: PropertyListValue].self, forKey: .puts) ?? [:],
                removing: try container.decodeIfPresent(Set<String>.self, forKey: .removes) ?? [])
        case "syncNow": operation = .syncNow
        case "health": operation = .health
        case "subscribe": operation = .subscribe
        default: throw ProtocolError(.malformedRequest, "unknown operation \"\(name.prefix(100))\"")
        }
    }

    /// Encodes the request in its wire form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(operation.name, forKey: .op)
        switch operation {
        case .items, .transfers, .syncNow, .health, .subscribe, .keyValues: break
        case .setKeyValues(let puts, let removes):
            try container.encode(puts, forKey: .puts)
            try container.encode(removes.sorted(), forKey: .removes)
        case .item(let path), .download(let path), .evict(let path), .versions(let path), .otherVersions(let path):
            try container.encode(path, forKey: .path)
        case .resolve(let path, let keep):
            try container.encode(path, forKey: .path)
            try container.encodeIfPresent(keep, forKey: .keep)
        case .contents(let path, let version):
            try container.encode(path, forKey: .path)
            try container.encode(version, forKey: .version)
        case .changeVersions(let path, let operations):
            try container.encode(path, forKey: .path)
            try container.encode(operations, forKey: .operations)
        case .changeVersionsNow(let path, let item, let change):
            try container.encode(path, forKey: .path)
            try container.encode(item, forKey: .item)
            try container.encode(change, forKey: .change)
        }
    }
}

extension EngineRequest.Operation {
    /// The operation's name on the wire (`"op"`).
    public var name: String {
        switch self {
        case .items: "items"
        case .transfers: "transfers"
        case .item: "item"
        case .download: "download"
        case .evict: "evict"
        case .versions: "versions"
        case .resolve: "resolve"
        case .contents: "contents"
        case .otherVersions: "otherVersions"
        case .changeVersions: "changeVersions"
        case .changeVersionsNow: "changeVersionsNow"
        case .keyValues: "keyValues"
        case .setKeyValues: "setKeyValues"
        case .syncNow: "syncNow"
        case .health: "health"
        case .subscribe: "subscribe"
        }
    }
}
