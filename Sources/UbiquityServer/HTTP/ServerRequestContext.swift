import Hummingbird
import HummingbirdWebSocket
import UbiquityProtocol

/// A request context that carries the device token the request was authenticated with.
public protocol AuthenticatedRequestContext: RequestContext {
    /// The token, once ``AuthenticationMiddleware`` has checked it.
    var identity: DeviceTokenRecord? { get set }
}

extension AuthenticatedRequestContext {
    /// The authenticated token. - Throws: ``ProtocolError/Code/unauthorized`` when there is none.
    func requireIdentity() throws(ProtocolError) -> DeviceTokenRecord {
        guard let identity else { throw ProtocolError(.unauthorized, "this request needs a bearer token") }
        return identity
    }

    /// The container named by the route's `{container}`, checked against the token.
    /// - Throws: ``ProtocolError/Code/invalidContainerID``, ``ProtocolError/Code/unauthorized`` or
    ///   ``ProtocolError/Code/containerNotPermitted``.
    func container() throws -> ContainerKey {
        let identity = try requireIdentity()
        let id = try ContainerID(try parameters.require("container"))
        guard identity.permits(id) else {
            throw ProtocolError(.containerNotPermitted, "this device's token may not use container \(id)")
        }
        return ContainerKey(account: identity.info.accountID, container: id)
    }
}

/// The context of every HTTP request the service answers.
public struct ServerRequestContext: AuthenticatedRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var identity: DeviceTokenRecord?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        identity = nil
    }
}

/// The context of a push (WebSocket upgrade) request.
public struct PushRequestContext: AuthenticatedRequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var identity: DeviceTokenRecord?
    public let webSocket: WebSocketHandlerReference<Self>

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        identity = nil
        webSocket = .init()
    }
}
