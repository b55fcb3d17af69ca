/// A text frame on the push WebSocket (`GET /v1/push`), JSON tagged by `type`.
///
/// The device sends ``subscribe``; the service answers ``subscribed`` and from then on sends ``changed`` when a
/// container's feed moves and ``keyValueChanged`` when its key-value store does, and ``heartbeat`` every few
/// seconds. A device that reconnects subscribes again and catches up from its own token; push messages carry
/// positions, never the changes themselves.
///
/// ```json
/// {"type": "subscribe", "containers": ["TEAM.com.example.grocery"]}
/// {"type": "changed", "container": "TEAM.com.example.grocery", "token": "…"}
/// ```
public enum PushMessage: Hashable, Sendable {
    /// From the device: send me news of these containers (replacing any earlier subscription).
    case subscribe(containers: [ContainerID])
    /// From the service: the subscription is in place for these containers.
    case subscribed(containers: [ContainerID])
    /// From the service: the container's change feed is now at `token`.
    case changed(container: ContainerID, token: ChangeToken)
    /// From the service: the container's key-value store is now at `token`.
    case keyValueChanged(container: ContainerID, token: ChangeToken)
    /// From the service: the connection is alive.
    case heartbeat
    /// From the service: a message could not be acted on.
    case error(ProtocolError)
}

extension PushMessage: Codable {
    private enum CodingKeys: String, CodingKey { case type, containers, container, token, error }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "subscribe": self = .subscribe(containers: try container.decode([ContainerID].self, forKey: .containers))
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
        case "heartbeat": self = .heartbeat
        case "error": self = .error(try container.decode(ProtocolError.self, forKey: .error))
        default: throw ProtocolError(.malformedRequest, "unknown push message \"\(type.prefix(80))\"")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .subscribe(let containers):
            try container.encode("subscribe", forKey: .type)
            try container.encode(containers, forKey: .containers)
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
        case .heartbeat:
            try container.encode("heartbeat", forKey: .type)
        case .error(let error):
            try container.encode("error", forKey: .type)
            try container.encode(error, forKey: .error)
        }
    }
}
