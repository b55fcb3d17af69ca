import Foundation
import Logging
import PostgresNIO
import Synchronization
import UbiquityProtocol

/// The nodes of a PostgreSQL deployment tell each other of changes with `NOTIFY` on one channel and hear them with
/// `LISTEN` on a connection of their own.
///
/// Events are sent after their change was committed, never inside the write's transaction (a `NOTIFY` there would
/// take a database-wide lock at every commit), and those queued meanwhile go together: as few notifications as fit
/// them, in one statement. A notification's payload is the sending node's id, a line break, and a JSON array of
/// events. A node ignores its own notifications by their first line, without decoding them (its routes told its
/// subscribers already). When the listening connection is lost the
/// node listens again, with back-off, and then signals ``ClusterSignal/resynchronize``: what was said while it was
/// deaf is lost, so it drops its caches and points its subscribers at their feeds.
public final class PostgresClusterBus: ClusterBus {
    static let channel = "ubiquity_events"

    /// The most bytes of events one notification carries (PostgreSQL refuses payloads of 8,000 bytes or more).
    static let payloadLimit = 7000

    private let store: PostgresMetadataStore
    private var node: UUID { store.node }
    /// Events not sent yet, and the sender's wake-up call.
    private let queue = Outbox()
    private let wake: AsyncStream<Void>.Continuation
    /// Sends what is queued; it ends when the bus is released.
    private let sender: Task<Void, Never>
    private let logger: Logger
    /// How long to wait before listening again after the connection was lost: the first and the longest wait.
    private let backoff: (first: Duration, longest: Duration)

    init(
        store: PostgresMetadataStore, logger: Logger,
        backoff: (first: Duration, longest: Duration) = (.milliseconds(100), .seconds(5))
    ) {
        self.store = store
        self.logger = logger
        self.backoff = backoff
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        wake = continuation
        sender = Task { [store, queue, logger] in
            await Self.send(queue, woken: stream, through: store, logger: logger)
        }
    }

    deinit {
        wake.finish()
        sender.cancel()
    }

    public func announce(_ event: ClusterEvent) {
        guard let data = try? JSONEncoder().encode(event) else { return }
        queue.append(String(decoding: data, as: UTF8.self))
        wake.yield()
    }

    /// `events` (each one JSON-encoded) as notification payloads from `node`, as many to a payload as fit.
    static func payloads(_ events: [String], from node: UUID) -> [String] {
        var payloads: [String] = []
        var current: [String] = []
        var size = 0
        for event in events {
            if !current.isEmpty, size + event.utf8.count + 1 > payloadLimit {
                payloads.append("\(node)\n[\(current.joined(separator: ","))]")
                current.removeAll()
                size = 0
            }
            current.append(event)
            size += event.utf8.count + 1
        }
        if !current.isEmpty { payloads.append("\(node)\n[\(current.joined(separator: ","))]") }
        return payloads
    }

    /// The events of a payload another node sent; none for this node's own or one that cannot be read. A payload
    /// of a node of an earlier build (one JSON object, `{"node": …, "event": …}`) is read too, so that nodes hear
    /// each other while a deployment is updated one node at a time.
    static func events(in payload: String, ignoring node: UUID) -> [ClusterEvent] {
        guard let newline = payload.utf8.firstIndex(of: UInt8(ascii: "\n")),
            let sender = UUID(uuidString: String(payload[..<newline]))
        else {
            guard let single = try? JSONDecoder().decode(SingleEvent.self, from: Data(payload.utf8)),
                single.node != node
            else { return [] }
            return [single.event]
        }
        guard sender != node else { return [] }
        let events = payload[payload.index(after: newline)...]
        return (try? JSONDecoder().decode([Known].self, from: Data(events.utf8)))?.compactMap(\.event) ?? []
    }

    /// An event of a payload, or `nil` for one a later build knows and this one does not (the others of its payload
    /// still count).
    private struct Known: Decodable {
        var event: ClusterEvent?
        init(from decoder: any Decoder) throws { event = try? ClusterEvent(from: decoder) }
    }

    /// The payload of a node of an earlier build: one event.
    private struct SingleEvent: Decodable {
        var node: UUID
        var event: ClusterEvent
    }

    public func positions(of containers: [ContainerKey]) async throws
        -> [ContainerKey: (changes: ChangeToken, keyValues: ChangeToken)]
    {
        try await store.latestTokens(of: containers)
    }

    public func listen(_ handler: @escaping @Sendable (ClusterSignal) async -> Void) async {
        var wait = backoff.first
        var listenedBefore = false
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { [node] connection in
                    try await connection.listen(on: Self.channel) { notifications in
                        wait = backoff.first
                        // What was said before this node listened is not heard: at start (while it already answers
                        // requests) its cached tokens are dropped; after a lost connection, its subscribers are
                        // told where their feeds are too.
                        await handler(listenedBefore ? .resynchronize : .listening)
                        listenedBefore = true
                        for try await notification in notifications {
                            for event in Self.events(in: notification.payload, ignoring: node) {
                                await handler(.event(event))
                            }
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning(
                    "lost the connection that hears other nodes; listening again",
                    metadata: ["error": "\(PostgresStoreError.describing(error, location: store.location))"])
            }
            try? await Task.sleep(for: wait)
            wait = min(wait * 2, backoff.longest)
        }
    }

    /// Sends what is queued each time it is woken, everything queued by then in one statement, until the wake-up
    /// calls end.
    private static func send(
        _ queue: Outbox, woken: AsyncStream<Void>, through store: PostgresMetadataStore, logger: Logger
    ) async {
        for await _ in woken {
            let batch = payloads(queue.takeAll(), from: store.node)
            guard !batch.isEmpty else { continue }
            do {
                try await store.client.withConnection { connection in
                    _ = try await connection.query(
                        "SELECT pg_notify(\(channel), payload) FROM unnest(\(batch)) AS payload", logger: logger)
                }
            } catch {
                // A hint lost: devices still catch up from the feed.
                logger.warning(
                    "could not tell other nodes of changes",
                    metadata: ["error": "\(PostgresStoreError.describing(error, location: store.location))"])
            }
        }
    }
}

/// Events waiting to be sent.
private final class Outbox: Sendable {
    private let items = Mutex<[String]>([])

    func append(_ item: String) {
        items.withLock { $0.append(item) }
    }

    /// Everything waiting, in order; the box is empty afterwards.
    func takeAll() -> [String] {
        items.withLock { items in
            defer { items.removeAll() }
            return items
        }
    }
}
