import UbiquityProtocol

/// One frame the engine sends: a response to a request, or — on a connection that subscribed — an event.
///
/// An event frame has an `"event"` field naming the event, and no `"id"`:
///
/// ```json
/// {"event":"itemChanged","item":{…}}
/// {"event":"itemRemoved","itemID":"…","path":"Documents/Old.txt"}
/// {"event":"progress","itemID":"…","path":"Documents/Big.pdf","transfer":{"direction":"download","completed":65536,"total":9000000}}
/// {"event":"progress","itemID":"…","path":"Documents/Big.pdf"}
/// {"event":"versionGained","itemID":"…","path":"…","version":{…}}
/// {"event":"keyValuesChanged","keys":["sortOrder"],"reason":"serverChange"}
/// {"event":"roundEnded","failure":"cannot reach the service at http://…: connection refused"}
/// {"event":"pushChanged","connected":false,"reason":"…"}
/// ```
///
/// (`versionLost` and `versionResolved` are written like `versionGained`; a `progress` without `transfer` says
/// the transfer ended; a `roundEnded` without `failure` ended in step; a client skips an event it does not know.)
public enum EngineMessage: Hashable, Sendable, Codable {
    /// The answer to a request.
    case response(EngineResponse)
    /// Something the engine did, pushed to a subscribed connection.
    case event(SyncEvent)

    enum CodingKeys: String, CodingKey {
        case event, item, itemID, path, transfer, version, keys, reason, failure, connected
    }

    /// Decodes a frame: an event when it has an `"event"` field, a response otherwise.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard let name = try container.decodeIfPresent(String.self, forKey: .event) else {
            self = .response(try EngineResponse(from: decoder))
            return
        }
        func item() throws -> (ItemID, ItemPath) {
            (try container.decode(ItemID.self, forKey: .itemID), try container.decode(ItemPath.self, forKey: .path))
        }
        func version() throws -> VersionRecord { try container.decode(VersionRecord.self, forKey: .version) }
        switch name {
        case "itemChanged": self = .event(.itemChanged(try container.decode(LocalItem.self, forKey: .item)))
        case "itemRemoved":
            let (id, path) = try item()
            self = .event(.itemRemoved(id, path))
        case "progress":
            let (id, path) = try item()
            self = .event(.progress(id, path, try container.decodeIfPresent(ItemTransfer.self, forKey: .transfer)))
        case "versionGained":
            let (id, path) = try item()
            self = .event(.versionGained(id, path, try version()))
        case "versionLost":
            let (id, path) = try item()
            self = .event(.versionLost(id, path, try version()))
        case "versionResolved":
            let (id, path) = try item()
            self = .event(.versionResolved(id, path, try version()))
        case "keyValuesChanged":
            self = .event(
                .keyValuesChanged(
                    try container.decode([String].self, forKey: .keys),
                    try container.decode(KeyValueChangeReason.self, forKey: .reason)))
        case "roundEnded":
            self = .event(.roundEnded(failure: try container.decodeIfPresent(String.self, forKey: .failure)))
        case "pushChanged":
            self = .event(
                .pushChanged(
                    connected: try container.decode(Bool.self, forKey: .connected),
                    reason: try container.decodeIfPresent(String.self, forKey: .reason)))
        default: throw ProtocolError(.malformedRequest, "unknown event \"\(name.prefix(100))\"")
        }
    }

    /// Encodes the frame in its wire form.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .response(let response): try response.encode(to: encoder)
        case .event(let event): try Self.encode(event, to: encoder)
        }
    }

    private static func encode(_ event: SyncEvent, to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        func item(_ name: String, _ id: ItemID, _ path: ItemPath) throws {
            try container.encode(name, forKey: .event)
            try container.encode(id, forKey: .itemID)
            try container.encode(path, forKey: .path)
        }
        switch event {
        case .itemChanged(let changed):
            try container.encode("itemChanged", forKey: .event)
            try container.encode(changed, forKey: .item)
        case .itemRemoved(let id, let path):
            try item("itemRemoved", id, path)
        case .progress(let id, let path, let transfer):
            try item("progress", id, path)
            try container.encodeIfPresent(transfer, forKey: .transfer)
        case .versionGained(let id, let path, let version):
            try item("versionGained", id, path)
            try container.encode(version, forKey: .version)
        case .versionLost(let id, let path, let version):
            try item("versionLost", id, path)
            try container.encode(version, forKey: .version)
        case .versionResolved(let id, let path, let version):
            try item("versionResolved", id, path)
            try container.encode(version, forKey: .version)
        case .keyValuesChanged(let keys, let reason):
            try container.encode("keyValuesChanged", forKey: .event)
            try container.encode(keys, forKey: .keys)
            try container.encode(reason, forKey: .reason)
        case .roundEnded(let failure):
            try container.encode("roundEnded", forKey: .event)
            try container.encodeIfPresent(failure, forKey: .failure)
        case .pushChanged(let connected, let reason):
            try container.encode("pushChanged", forKey: .event)
            try container.encode(connected, forKey: .connected)
            try container.encodeIfPresent(reason, forKey: .reason)
        }
    }
}
