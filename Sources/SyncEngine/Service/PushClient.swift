import Foundation
import HummingbirdWSClient
import Logging
import Synchronization
import UbiquityProtocol

/// Keeps a device's push connection (`GET /v1/push`) open: subscribes to its containers, hands on what the
/// service says, and reconnects with backoff whenever the connection drops.
///
/// After every (re)connection ``Event/connected`` comes first: the engine then catches up from its own feed token,
/// since pushes sent while it was away are not replayed.
///
/// ```swift
/// for await event in PushClient(baseURL: url, token: token, containers: [container]).events() {
///     if case .message(.changed(_, let token)) = event { … pull the feed up to token … }
/// }
/// ```
public struct PushClient: Sendable {
    /// What the connection reports.
    public enum Event: Sendable {
        /// The connection is up and subscribed.
        case connected
        /// A message from the service.
        case message(PushMessage)
        /// The connection dropped (or could not be made); the next try comes after `retryIn`.
        case disconnected(reason: String, retryIn: Duration)
    }

    /// The service's address (`http://…` or `https://…`).
    public let baseURL: String
    /// The device's bearer token.
    public let token: String
    /// The containers to hear about.
    public let containers: [ContainerID]
    /// The first wait after a drop; it doubles up to ``maximumBackoff``.
    public var initialBackoff: Duration = .milliseconds(100)
    /// The longest wait between tries.
    public var maximumBackoff: Duration = .seconds(30)
    /// Whether to hear of uploads' drafts too (``PushMessage/draft(container:item:version:count:)``).
    public var followsDrafts = true
    let logger: Logger

    /// Creates a push client.
    public init(
        baseURL: String, token: String, containers: [ContainerID], logger: Logger = Logger(label: "ubiquity.push")
    ) {
        self.baseURL = baseURL
        self.token = token
        self.containers = containers
        self.logger = logger
    }

    /// The connection's events, until the stream is dropped or its consumer is cancelled.
    public func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(1024))
        // The connection loop lives as long as the stream: ended by `onTermination` below.
        let task = Task { await run(continuation) }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    var webSocketURL: String {
        let url = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        if url.hasPrefix("https://") { return "wss://" + url.dropFirst("https://".count) + "/v1/push" }
        if url.hasPrefix("http://") { return "ws://" + url.dropFirst("http://".count) + "/v1/push" }
        return url + "/v1/push"
    }

    private func run(_ continuation: AsyncStream<Event>.Continuation) async {
        var backoff = initialBackoff
        let subscribe = String(
            decoding: (try? JSONEncoder().encode(PushMessage.subscribe(containers: containers, drafts: followsDrafts)))
                ?? Data(),
            as: UTF8.self)
        while !Task.isCancelled {
            var reason = "the service closed the connection"
            let subscribed = Flag()
            do {
                try await WebSocketClient.connect(
                    url: webSocketURL, configuration: .init(additionalHeaders: [.authorization: "Bearer \(token)"]),
                    logger: logger
                ) { inbound, outbound, _ in
                    try await outbound.write(.text(subscribe))
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message,
                            let decoded = try? JSONDecoder().decode(PushMessage.self, from: Data(text.utf8))
                        else { continue }
                        if case .subscribed = decoded {
                            subscribed.set()
                            continuation.yield(.connected)
                        } else {
                            continuation.yield(.message(decoded))
                        }
                    }
                }
            } catch {
                reason = "\(ServiceUnreachableError(error, url: baseURL) ?? error)"
            }
            if Task.isCancelled { break }
            if subscribed.isSet { backoff = initialBackoff }
            let wait = backoff
            continuation.yield(.disconnected(reason: reason, retryIn: wait))
            backoff = min(backoff * 2, maximumBackoff)
            try? await Task.sleep(for: wait)
        }
        continuation.finish()
    }
}

/// A flag set in one task and read in another (a connection's handler and its caller; a pipelined upload's sender
/// and its reader).
final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// Where the engine hears that the service changed: ``PushClient`` (the service's WebSocket) is the real one; a test
/// or the simulation hands in its own.
public protocol PushSource: Sendable {
    /// The push events from now on, for as long as the stream is iterated.
    func events() -> AsyncStream<PushClient.Event>
}

extension PushClient: PushSource {}
