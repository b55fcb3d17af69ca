import Foundation
import HTTPTypes
import HummingbirdTesting
import HummingbirdWSClient
import Logging
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityServer

/// The service over real sockets on 127.0.0.1 (port 0), and across a restart on the same data directory.
@Suite("Service: live on loopback")
struct LiveServiceTests {
    @Test("A subscribed WebSocket client is told of another device's commit, with the commit's token")
    func pushTellsSubscriberOfCommit() async throws {
        try await TestServer.make().test(.live) { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            let desktop = try await Device.signIn(client, account: "ada", device: "desktop")
            let port = try #require(client.port)
            let received = try await withDeadline(seconds: 600) {
                try await Self.listen(port: port, token: desktop.token, container: desktop.container) {
                    try await laptop.create("Documents/Pushed.txt", "hello".bytes).token
                }
            }
            #expect(received.changed == received.expected, "the push names the feed position of the commit")
            #expect(received.heartbeats > 0)
            let page = try await desktop.send(.get, desktop.path("changes")).decode(ChangePage.self)
            #expect(page.nextToken == received.changed, "catching up from the pushed token needs nothing more")
        }
    }

    @Test("A push connection without a valid token is refused, and a subscription to a foreign container too")
    func pushRefusesStrangers() async throws {
        try await TestServer.make().test(.live) { client in
            let port = try #require(client.port)
            await #expect(throws: (any Error).self) {
                try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/v1/push", logger: Self.quiet) {
                    _, _, _ in
                }
            }
            let other = try ContainerID("TEAM.com.example.other")
            let limited = try await Device.signIn(
                client, account: "ada", device: "laptop", containers: [Device.defaultContainer])
            let answer = try await withDeadline(seconds: 600) {
                try await Self.firstAnswer(port: port, token: limited.token, subscribing: [other])
            }
            guard case .error(let error) = answer else {
                Issue.record("expected an error, got \(answer)")
                return
            }
            #expect(error.code == .containerNotPermitted)
        }
    }

    @Test("Feed tokens, device tokens and content survive a restart on the same data directory")
    func feedSurvivesRestart() async throws {
        let first = try await TestServer.make()
        let (token, device, before) = try await first.test(keep: true) { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            for index in 0..<12 { _ = try await laptop.create("Documents/Item \(index).txt", "item \(index)".bytes) }
            let page = try await laptop.send(.get, laptop.path("changes?limit=10")).decode(ChangePage.self)
            #expect(page.changes.count == 10)
            #expect(page.hasMore)
            return (page.nextToken, laptop, try await laptop.allChanges())
        }
        let second = try await TestServer.make(in: first.directory)
        try await second.test { client in
            let laptop = Device(client: client, token: device.token, info: device.info, container: device.container)
            var rest: [Change] = []
            var since = token
            while true {
                let page = try await laptop.send(.get, laptop.path("changes?limit=7&since=\(since)")).decode(
                    ChangePage.self)
                rest += page.changes
                since = page.nextToken
                if !page.hasMore { break }
            }
            #expect(Array(before.dropFirst(10)) == rest, "paging resumes where it stopped before the restart")
            let items = try await laptop.send(.get, laptop.path("items")).decode(ItemListResponse.self)
            #expect(items.items.count == 12)
            #expect(items.token == since)
            let detail = try await laptop.send(.get, laptop.path("items/\(items.items[0].id)")).decode(ItemDetail.self)
            #expect(try await laptop.download(detail.versions[0]) == "item 0".bytes)
            let expired = try await laptop.send(.get, laptop.path("changes?since=f1.0123456789abcdef.5"))
            #expect(expired.status == .gone)
            #expect(expired.error?.code == .changeTokenExpired)
        }
    }

    @Test(
        "The OpenAPI document lists exactly the routes the service registers; health answers, metrics time the stores")
    func openAPIMatchesRoutes() async throws {
        let server = try await TestServer.make()
        let registered = Set(server.service.routes)
        let documented = Set(OpenAPIDocument.operations)
        #expect(
            registered.subtracting(documented).isEmpty, "undocumented routes: \(registered.subtracting(documented))")
        #expect(
            documented.subtracting(registered).isEmpty,
            "documented but not served: \(documented.subtracting(registered))")
        #expect(registered.count > 20)
        try await server.test { client in
            let document = try await client.executeRequest(uri: "/openapi.json", method: .get, headers: [:], body: nil)
            let json = try JSONSerialization.jsonObject(with: Data(document.body.readableBytesView)) as? [String: Any]
            let paths = try #require(json?["paths"] as? [String: [String: Any]])
            for route in registered {
                #expect(paths[route.path]?[route.method.lowercased()] != nil, "\(route) is in the served document")
            }
            let health = try await client.executeRequest(uri: "/health", method: .get, headers: [:], body: nil)
            #expect(health.status == .ok)
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            _ = try await laptop.create("Documents/List.txt", Array("milk".utf8))
            let metrics = try await client.executeRequest(uri: "/metrics", method: .get, headers: [:], body: nil)
            let text = String(buffer: metrics.body)
            #expect(text.contains("ubiquity_http_requests_total"))
            #expect(text.contains("ubiquity_push_connections"))
            // How long the stores took, by operation: the sign-in's account lookup, the create's commit, the
            // chunk's storing.
            for series in [
                #"ubiquity_database_duration_seconds_count{operation="account"} "#,
                #"ubiquity_database_duration_seconds_count{operation="create_item"} 1"#,
                #"ubiquity_chunk_store_duration_seconds_count{operation="store"} "#,
            ] {
                #expect(text.contains(series), "/metrics has \(series)")
            }
        }
    }

    // MARK: Push helpers

    static let quiet: Logger = {
        var logger = Logger(label: "ubiquity.test.push")
        logger.logLevel = .critical
        return logger
    }()

    struct Received: Sendable {
        var expected: ChangeToken
        var changed: ChangeToken?
        var heartbeats: Int
    }

    /// Subscribes to `container`, runs `trigger` once subscribed, and waits for the push it causes and a heartbeat.
    static func listen(
        port: Int, token: String, container: ContainerID, trigger: @escaping @Sendable () async throws -> ChangeToken
    ) async throws -> Received {
        let result = Mutex<Received?>(nil)
        try await WebSocketClient.connect(
            url: "ws://127.0.0.1:\(port)/v1/push",
            configuration: .init(additionalHeaders: [.authorization: "Bearer \(token)"]), logger: quiet
        ) { inbound, outbound, _ in
            try await outbound.write(.text(try encode(.subscribe(containers: [container]))))
            var received: Received?
            for try await message in inbound.messages(maxSize: 1 << 20) {
                guard case .text(let text) = message else { continue }
                switch try JSONDecoder().decode(PushMessage.self, from: Data(text.utf8)) {
                case .subscribed: received = Received(expected: try await trigger(), heartbeats: 0)
                case .changed(_, let token): received?.changed = token
                case .heartbeat: received?.heartbeats += 1
                default: break
                }
                if let received, received.changed != nil, received.heartbeats > 0 { break }
            }
            result.withLock { $0 = received }
        }
        return try #require(result.withLock { $0 })
    }

    /// Subscribes to `containers` and returns the first answer.
    static func firstAnswer(port: Int, token: String, subscribing containers: [ContainerID]) async throws -> PushMessage
    {
        let result = Mutex<PushMessage?>(nil)
        try await WebSocketClient.connect(
            url: "ws://127.0.0.1:\(port)/v1/push",
            configuration: .init(additionalHeaders: [.authorization: "Bearer \(token)"]), logger: quiet
        ) { inbound, outbound, _ in
            try await outbound.write(.text(try encode(.subscribe(containers: containers))))
            for try await message in inbound.messages(maxSize: 1 << 20) {
                guard case .text(let text) = message else { continue }
                let answer = try JSONDecoder().decode(PushMessage.self, from: Data(text.utf8))
                if answer == .heartbeat { continue }
                result.withLock { $0 = answer }
                break
            }
        }
        return try #require(result.withLock { $0 })
    }

    static func encode(_ message: PushMessage) throws -> String {
        String(decoding: try JSONEncoder().encode(message), as: UTF8.self)
    }
}

/// Runs `body`, failing instead of hanging if it takes longer than `seconds` (a guard, not a timing assertion: long
/// enough that a step starved by a fully loaded machine, as when the whole suite runs on two cores, still ends).
func withDeadline<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        guard let first = try await group.next(), let value = first else {
            group.cancelAll()
            throw DeadlineExceeded(seconds: seconds)
        }
        group.cancelAll()
        return value
    }
}

struct DeadlineExceeded: Error, CustomStringConvertible {
    var seconds: Double
    var description: String { "gave up after \(seconds) s" }
}
