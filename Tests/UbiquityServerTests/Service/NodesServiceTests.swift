import Foundation
import HTTPTypes
import HummingbirdTesting
import HummingbirdWSClient
import Synchronization
import Testing
import UbiquityProtocol

@testable import UbiquityServer

/// Two service nodes sharing one PostgreSQL database, each serving over loopback: a device may use either, and
/// what happens through one reaches the other's devices.
@Suite(
    "Service: several nodes on one PostgreSQL database",
    .enabled(
        if: StorageFixtures.postgresURL != nil || StorageFixtures.isCI,
        "UBIQUITY_POSTGRES_URL names no PostgreSQL server (.ci/run starts one)"))
struct NodesServiceTests {
    /// A node on the database schema `schema`, trusting checked tokens for an hour: only the nodes' messages
    /// to each other can make it drop a revoked one in time.
    private func node(_ schema: String) async throws -> TestServer {
        let url = try #require(StorageFixtures.postgresURL, "UBIQUITY_POSTGRES_URL names no PostgreSQL server")
        return try await TestServer.make {
            $0.database = url + "?schema=\(schema)&pool=4"
            $0.tokenCacheLifetime = .seconds(3_600)
        }
    }

    /// Two nodes on a new schema, each serving over loopback and listening to the other, with a device of one
    /// account signed in through each: the laptop through the first, the desktop through the second.
    private func withTwoNodes(_ body: @escaping @Sendable (TwoNodes) async throws -> Void) async throws {
        let schema = "nodes_\(UUID().uuidString.prefix(8).lowercased())"
        let one = try await node(schema)
        let two = try await node(schema)
        try await one.test(.live) { first in
            try await two.test(.live) { second in
                try await Self.waitUntilListening(one, two)
                try await body(
                    TwoNodes(
                        second: two, port: try #require(second.port),
                        laptop: try await Device.signIn(first, account: "ada", device: "laptop"),
                        desktop: try await Device.signIn(second, account: "ada", device: "desktop")))
            }
        }
    }

    private struct TwoNodes: Sendable {
        let second: TestServer
        /// The second node's port.
        let port: Int
        let laptop: Device
        let desktop: Device
    }

    @Test("a node listens for the others while its application runs, and its listening connection ends when it stops")
    func listeningEndsWithTheApplication() async throws {
        let server = try await node("nodes_\(UUID().uuidString.prefix(8).lowercased())")
        #expect(try await Self.listening(server) == 0, "nothing listens before the application runs")
        try await server.test(.live) { _ in try await Self.waitUntilListening(server) }
        try await Self.waitUntilListening(server, count: 0)
    }

    /// How many listening connections the node has, as the database sees them (each connection's application name is
    /// `ubiquity node <id>`; the listening one's last statement is its LISTEN).
    private static func listening(_ server: TestServer) async throws -> Int {
        let store = try #require(server.service.store as? PostgresMetadataStore)
        return try await store.read { db in
            try await db.value(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE application_name = \("ubiquity node \(store.node)") AND query LIKE 'LISTEN%'
                """, as: Int.self) ?? 0
        }
    }

    /// Returns once each of `servers` has `count` listening connections (a node starts listening as its application
    /// starts, and a message sent before it listens is not heard).
    private static func waitUntilListening(_ servers: TestServer..., count: Int = 1) async throws {
        for server in servers {
            let deadline = ContinuousClock.now + .seconds(30)
            while try await listening(server) != count, ContinuousClock.now < deadline {
                // A poll: a node tells of its LISTEN only to its own routes (``ClusterSignal/listening``); the
                // database's list of connections is what a test can read, and it announces nothing.
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try await listening(server) == count)
        }
    }

    @Test("a draft grown through one node is pushed to the other's followers and read through it; the commit ends it")
    func draftAcrossNodes() async throws {
        try await withTwoNodes { nodes in
            let (laptop, desktop) = (nodes.laptop, nodes.desktop)
            let item = ItemID()
            _ = try await laptop.send(
                .post, laptop.path("items"),
                json: CreateItemRequest(id: item, path: try ItemPath("Documents/Film.mov"), kind: .file)
            ).decode(ItemResponse.self)
            let prepared = try await laptop.prepareVersion(
                of: item, (0..<30_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
            let chunks = prepared.manifest.chunks
            let port = nodes.port
            let heard = try await AuthorizationTests.within(seconds: 60) {
                try await Self.news(
                    port: port, token: desktop.token, container: desktop.container, drafts: true
                ) {
                    let grown = try await laptop.send(
                        .post, laptop.path("items/\(item)/drafts/\(prepared.id)"),
                        json: DraftAppendRequest(from: 0, chunks: chunks))
                    #expect(try grown.decode(DraftPage.self).count == chunks.count)
                } until: { message in
                    if case .draft = message { return true }
                    return false
                }
            }
            #expect(
                heard.last
                    == .draft(container: desktop.container, item: item, version: prepared.id, count: chunks.count))
            let route = desktop.path("items/\(item)/drafts/\(prepared.id)")
            #expect(try await desktop.send(.get, route).decode(DraftPage.self).chunks == chunks)

            _ = try await laptop.send(.post, laptop.path("items/\(item)/versions"), json: prepared).decode(
                ItemResponse.self)
            #expect(try await desktop.send(.get, route).error?.code == .unknownVersion, "the commit ended it")
        }
    }

    @Test("a change through one node is pushed to the other's subscribers; a token revoked on one is refused by both")
    func pushAndRevocationAcrossNodes() async throws {
        try await withTwoNodes { nodes in
            let (laptop, desktop) = (nodes.laptop, nodes.desktop)
            let port = nodes.port

            // The desktop listens on the second node; the laptop writes through the first.
            let heard = try await AuthorizationTests.within(seconds: 60) {
                try await Self.firstNews(port: port, token: desktop.token, container: desktop.container) {
                    let written = try await laptop.send(
                        .post, laptop.path("kv"),
                        json: KeyValueBatch(writes: [
                            KeyValueWrite(key: "theme", value: .string("dark"), timestamp: Date())
                        ]))
                    #expect(written.status == .ok)
                }
            }
            guard case .keyValueChanged(let container, _) = heard else {
                Issue.record("expected the key-value change, heard \(heard)")
                return
            }
            #expect(container == desktop.container)

            // The first node has checked (and cached) the laptop's token; the desktop revokes it on the second.
            #expect(try await laptop.send(.get, laptop.path("kv")).status == .ok)
            let revoked = try await desktop.send(.delete, "/v1/tokens/\(laptop.info.id.uuidString)")
            #expect(revoked.status == .noContent)
            let refused = try await AuthorizationTests.within(seconds: 60) {
                while try await laptop.send(.get, laptop.path("kv")).status != .unauthorized {
                    // A poll: the first node reports nothing when it drops a token, so its answer is the event.
                    try await Task.sleep(for: .milliseconds(20))
                }
                return true
            }
            #expect(refused)
            #expect(try await desktop.send(.get, desktop.path("kv")).status == .ok)
        }
    }

    @Test("a node whose listening connection is cut listens again, and its subscribers still hear of the change")
    func listenerCutByTheDatabase() async throws {
        try await withTwoNodes { nodes in
            let (laptop, desktop) = (nodes.laptop, nodes.desktop)
            let store = try #require(nodes.second.service.store as? PostgresMetadataStore)
            let port = nodes.port
            let written = Mutex<ChangeToken?>(nil)
            let heard = try await AuthorizationTests.within(seconds: 60) {
                try await Self.news(port: port, token: desktop.token, container: desktop.container) {
                    // The database ends the second node's listening connection; the change goes through the
                    // first at once, while the second may still be deaf.
                    let cut = try await store.write { db in
                        try await db.values(
                            """
                            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                            WHERE application_name = \("ubiquity node \(store.node)") AND query LIKE 'LISTEN%'
                            """, as: Bool.self)
                    }
                    #expect(cut == [true], "the node's one listening connection was ended")
                    let response = try await laptop.send(
                        .post, laptop.path("kv"),
                        json: KeyValueBatch(writes: [
                            KeyValueWrite(key: "theme", value: .string("dark"), timestamp: Date())
                        ])
                    ).decode(KeyValueBatchResponse.self)
                    written.withLock { $0 = response.token }
                } until: { message in
                    // The change itself, or the catching-up after listening again, names the new position.
                    guard case .keyValueChanged(_, let token) = message else { return false }
                    return token == written.withLock { $0 }
                }
            }
            #expect(heard.count >= 1)
        }
    }

    /// Subscribes to `container` on the node at `port`, runs `trigger` once subscribed, and returns the messages
    /// (neither heartbeats nor the subscription's answer) heard until one satisfies `until`.
    private static func news(
        port: Int, token: String, container: ContainerID, drafts: Bool = false,
        trigger: @escaping @Sendable () async throws -> Void, until done: @escaping @Sendable (PushMessage) -> Bool
    ) async throws -> [PushMessage] {
        let result = Mutex<[PushMessage]>([])
        try await WebSocketClient.connect(
            url: "ws://127.0.0.1:\(port)/v1/push",
            configuration: .init(additionalHeaders: [.authorization: "Bearer \(token)"]),
            logger: AuthorizationTests.quiet
        ) { inbound, outbound, _ in
            try await outbound.write(
                .text(try AuthorizationTests.encode(.subscribe(containers: [container], drafts: drafts))))
            for try await message in inbound.messages(maxSize: 1 << 20) {
                guard case .text(let text) = message else { continue }
                let decoded = try JSONDecoder().decode(PushMessage.self, from: Data(text.utf8))
                switch decoded {
                case .heartbeat: continue
                case .subscribed: try await trigger()
                default:
                    result.withLock { $0.append(decoded) }
                    if done(decoded) { return }
                }
            }
        }
        return result.withLock { $0 }
    }

    /// Subscribes to `container` on the node at `port`, runs `trigger` once subscribed, and returns the first
    /// message that is neither a heartbeat nor the subscription's answer.
    private static func firstNews(
        port: Int, token: String, container: ContainerID, trigger: @escaping @Sendable () async throws -> Void
    ) async throws -> PushMessage {
        try #require(
            try await news(port: port, token: token, container: container, trigger: trigger, until: { _ in true })
                .first)
    }
}
