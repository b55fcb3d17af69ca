import Foundation
import Hummingbird
import HummingbirdWebSocket
import UbiquityProtocol

extension RouteEnvironment {
    /// `GET /v1/push`: the WebSocket a device keeps open to hear of changes (see ``PushMessage``).
    func addPushRoutes(to router: some RouterMethods<PushRequestContext>) {
        router.ws("push") { _, context in
            _ = try context.requireIdentity()
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            guard let identity = context.requestContext.identity else { return }
            try await serve(identity, inbound: inbound, outbound: outbound)
        }
    }

    /// `GET /v1/push` without an upgrade (or whose upgrade was refused) on the HTTP side: after authentication, a
    /// clear refusal instead of a missing route.
    func addPushFallbackRoute(to router: some RouterMethods<ServerRequestContext>) {
        router.get("push") { _, context -> Response in
            _ = try context.requireIdentity()
            throw ProtocolError(.malformedRequest, "/v1/push is a WebSocket; connect with Upgrade: websocket")
        }
    }

    /// Runs one push connection until the device closes it.
    private func serve(
        _ identity: DeviceTokenRecord, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter
    ) async throws {
        let (connection, messages) = hub.connect(account: identity.info.accountID)
        metrics.pushConnections.increment()
        defer {
            hub.disconnect(connection)
            metrics.pushConnections.decrement()
        }
        let hub = hub
        let metrics = metrics
        let interval = configuration.heartbeatInterval
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Writes what the hub queues for this connection, in order, until the connection ends.
            group.addTask {
                let encoder = JSONEncoder()
                for await message in messages {
                    try await outbound.write(.text(String(decoding: try encoder.encode(message), as: UTF8.self)))
                    metrics.pushMessages.increment()
                }
            }
            // Heartbeats, so devices (and proxies) know the connection is alive.
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: interval)
                    hub.send(.heartbeat, to: connection)
                }
            }
            for try await message in inbound.messages(maxSize: 1 << 20) {
                hub.send(Self.answer(to: message, from: identity, connection: connection, hub: hub), to: connection)
            }
            hub.disconnect(connection)
            group.cancelAll()
        }
    }

    /// Acts on a device's message and returns the answer.
    private static func answer(
        to message: WebSocketMessage, from identity: DeviceTokenRecord, connection: PushHub.Connection, hub: PushHub
    ) -> PushMessage {
        guard case .text(let text) = message else {
            return .error(ProtocolError(.malformedRequest, "push messages are JSON text"))
        }
        do {
            guard
                case .subscribe(let containers, let drafts) = try JSONDecoder().decode(
                    PushMessage.self, from: Data(text.utf8))
            else { return .error(ProtocolError(.malformedRequest, "a device may only send subscribe")) }
            if let refused = containers.first(where: { !identity.permits($0) }) {
                return .error(
                    ProtocolError(.containerNotPermitted, "this device's token may not use container \(refused)"))
            }
            hub.subscribe(connection, to: containers, drafts: drafts)
            return .subscribed(containers: containers)
        } catch let error as ProtocolError {
            return .error(error)
        } catch let error as DecodingError {
            return .error(ProtocolError(.malformedRequest, "not a push message: \(error.summary)"))
        } catch {
            return .error(ProtocolError(.malformedRequest, "not a push message"))
        }
    }
}
