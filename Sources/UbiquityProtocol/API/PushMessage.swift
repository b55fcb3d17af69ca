/// A text frame on the push WebSocket (`GET /v1/push`), JSON tagged by `type`.
///
/// The device sends ``subscribe``; the service answers ``subscribed`` and from then on sends ``changed`` when a
/// container's feed moves and ``keyValueChanged`` when its key-value store does, and ``heartbeat`` every few
/// seconds. A device that reconnects subscribes again and catches up from its own token; push messages carry
/// positions, never the changes themselves. A device that subscribes with `drafts` also hears ``draft`` as an
/// upload's draft grows (``DraftAppendRequest``).
///
/// ```json
/// {"type": "subscribe", "containers": ["TEAM.com.example.grocery"]}
/// {"type": "changed", "container": "TEAM.com.example.grocery", "token": "…"}
/// ```
public enum PushMessage: Hashable, Sendable {
    /// From the device: send me news of these containers (replacing any earlier subscription); with `drafts`, news
    /// of uploads' drafts too.
    case subscribe(containers: [ContainerID], drafts: Bool = false)
    /// From the service: the subscription is in place for these containers.
    case subscribed(containers: [ContainerID])
    /// From the service: the container's change feed is now at `token`.
    case changed(container: ContainerID, token: ChangeToken)
    /// From the service: the container's key-value store is now at `token`.
    case keyValueChanged(container: ContainerID, token: ChangeToken)
    /// From the service: the draft of `version` of `item` now holds `count` chunks (to a device subscribed with
    /// `drafts`).
    case draft(container: ContainerID, item: ItemID, version: VersionID, count: Int)
    /// From the service: the connection is alive.
    case heartbeat
    /// From the service: a message could not be acted on.
    case error(ProtocolError)
}

extension PushMessage: Codable {
    private enum CodingKeys: String, CodingKey {
        case type, containers, drafts, container, token, error, item, version, count
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "subscribe":
            self = .subscribe(
                containers: try container.decode([ContainerID].self, forKey: .containers),
                drafts: try container.decodeIfPresent(Bool.self, forKey: .drafts) ?? false)
        case "subscribed":
            self = .subscribed(containers: try container.decode([ContainerID].self, forKey: .containers))
        case "changed":
            self = .changed(
                container: try container.decode(ContainerID.self, forKey: .container),
                token: try container.decode(ChangeToken.self, forKey: .token))
        case "keyValueChanged":
            self = .keyValueChanged(
                container: try container.decode(ContainerID.self, forKey: .container),
                token: try container.decode(ChangeToken.self, forKey: .token))
        case "draft":
            self = .draft(
                container: try container.decode(ContainerID.self, forKey: .container),
                item: try container.decode(ItemID.self, forKey: .item),
                version: try container.decode(VersionID.self, forKey: .version),
                count: try container.decode(Int.self, forKey: .count))
        case "heartbeat": self = .heartbeat
        case "error": self = .error(try container.decode(ProtocolError.self, forKey: .error))
        default: throw ProtocolError(.malformedRequest, "unknown push message \"\(type.prefix(80))\"")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .subscribe(let containers, let drafts):
            try container.encode("subscribe", forKey: .type)
            try container.encode(containers, forKey: .containers)
            if drafts { try container.encode(true, forKey: .drafts) }
        case .subscribed(let containers):
            try container.encode("subscribed", forKey: .type)
            try container.encode(containers, forKey: .containers)
        case .changed(let id, let token):
            try container.encode("changed", forKey: .type)
            try container.encode(id, forKey: .container)
            try container.encode(token, forKey: .token)
        case .keyValueChanged(let id, let token):
            try container.encode("keyValueChanged", forKey: .type)
            try container.encode(id, forKey: .container)
            try container.encode(token, forKey: .token)
        case .draft(let id, let item, let version, let count):
            try container.encode("draft", forKey: .type)
            try container.encode(id, forKey: .container)
            try container.encode(item, forKey: .item)
            try container.encode(version, forKey: .version)
            try container.encode(count, forKey: .count)
        case .heartbeat:
            try container.encode("heartbeat", forKey: .type)
        case .error(let error):
            try container.encode("error", forKey: .type)
            try container.encode(error, forKey: .error)
        }
    }
}
