import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import Synchronization
import UbiquityProtocol
import UbiquityServer

/// `server.push`: from a commit to its push reaching each of 1,000 subscribed WebSocket clients on loopback
/// (p50 and p99 over every delivery of 20 commits, after one commit not measured), on one node on the embedded
/// default. When `UBIQUITY_POSTGRES_URL` names a PostgreSQL database, the same again across two nodes in this process
/// sharing a schema of the run's own: the clients subscribe on the second node, the commits go through the first,
/// and each push reaches the second node the way it does in a cluster (the first tells the others through the
/// database, ``ClusterBus``). The commits create folders, so no chunk needs to be visible to both nodes, and each node
/// keeps its own data directory.
enum ServerPushBenchmark {
    static let name = "server.push"
    static let clientCount = 1000
    static let rounds = 20

    /// What the clients have seen: the instant each push arrived, by token.
    final class Deliveries: Sendable {
        let arrivals = Mutex<[String: [ContinuousClock.Instant]]>([:])
        let subscribed = Mutex(0)
        let done = Mutex(false)

        func count(_ token: String) -> Int { arrivals.withLock { $0[token]?.count ?? 0 } }
    }

    /// Every delivery's time from the start of its commit, and each commit's time to its answer.
    struct Latencies {
        var deliveries: [Duration] = []
        var commits: [Duration] = []
    }

    static func run(in scratch: URL) async throws {
        let server = try await BenchServer.start(in: scratch.appendingPathComponent("data"))
        let single = try await measure(committingThrough: server, subscribedTo: server)
        try await server.stop()
        figures(single, label: "\(clientCount) clients, \(rounds) commits")

        guard let url = ProcessInfo.processInfo.environment["UBIQUITY_POSTGRES_URL"], !url.isEmpty else { return }
        let schema = "bench_\(UUID().uuidString.prefix(8).lowercased())"
        let database = url + (url.contains("?") ? "&" : "?") + "schema=\(schema)"
        let first = try await BenchServer.start(in: scratch.appendingPathComponent("node-1"), database: database)
        let second = try await BenchServer.start(
            in: scratch.appendingPathComponent("node-2"), database: database, registering: false)
        let across = try await measure(committingThrough: first, subscribedTo: second)
        try await second.stop()
        try await first.stop()
        try await first.dropSchema()
        figures(
            across,
            label: "two nodes on PostgreSQL, commits on node 1, \(clientCount) clients on node 2, \(rounds) commits")
    }

    private static func figures(_ latencies: Latencies, label: String) {
        let sorted = latencies.deliveries.sorted()
        let p50 = sorted[sorted.count / 2]
        let p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
        BenchOutput.figure(bench: name, case: label, metric: "p50_ms", value: Measure.microseconds(p50) / 1000)
        BenchOutput.figure(bench: name, case: label, metric: "p99_ms", value: Measure.microseconds(p99) / 1000)
        BenchOutput.figure(
            bench: name, case: label, metric: "commit_answer_p50_ms",
            value: Measure.microseconds(Measure.median(latencies.commits)) / 1000)
    }

    /// Subscribes ``clientCount`` clients to the container on `subscribed` (with its device's token), then commits
    /// through `committing` (the same service or another node on the same database) ``rounds`` times, each once the
    /// previous one reached every client.
    private static func measure(committingThrough committing: BenchServer, subscribedTo subscribed: BenchServer)
        async throws -> Latencies
    {
        let deliveries = Deliveries()
        let logger = {
            var logger = Logger(label: "ubiquity.bench.push")
            logger.logLevel = .critical
            return logger
        }()
        let url = "ws://127.0.0.1:\(subscribed.port)/v1/push"
        let subscribe = String(
            decoding: try JSONEncoder().encode(PushMessage.subscribe(containers: [subscribed.container])),
            as: UTF8.self)
        let token = subscribed.token

        return try await withThrowingTaskGroup(of: Latencies?.self) { group in
            for _ in 0..<clientCount {
                group.addTask {
                    try await WebSocketClient.connect(
                        url: url, configuration: .init(additionalHeaders: [.authorization: "Bearer \(token)"]),
                        logger: logger
                    ) { inbound, outbound, _ in
                        try await outbound.write(.text(subscribe))
                        for try await message in inbound.messages(maxSize: 1 << 16) {
                            let now = ContinuousClock.now
                            guard case .text(let text) = message,
                                let decoded = try? JSONDecoder().decode(PushMessage.self, from: Data(text.utf8))
                            else { continue }
                            switch decoded {
                            case .subscribed: deliveries.subscribed.withLock { $0 += 1 }
                            case .changed(_, let token):
                                deliveries.arrivals.withLock { $0[token.string, default: []].append(now) }
                            default: break
                            }
                            if deliveries.done.withLock({ $0 }) { break }
                        }
                    }
                    return nil
                }
            }
            group.addTask {
                try await waitUntil { deliveries.subscribed.withLock { $0 } == clientCount }
                // Creates a folder through `committing`; returns when the commit began, how long it took to be
                // answered, and its token.
                func commit(_ path: String) async throws -> (
                    start: ContinuousClock.Instant, answered: Duration, token: String
                ) {
                    let start = ContinuousClock.now
                    let answer = try JSONDecoder().decode(
                        ItemResponse.self,
                        from: try await committing.send(
                            .POST, committing.url("items"),
                            json: CreateItemRequest(path: try ItemPath(path), kind: .directory)))
                    return (start, ContinuousClock.now - start, answer.token.string)
                }
                // One commit first, not measured: the first of a run also pays for connections and statements
                // being prepared.
                let warm = try await commit("Documents/warm")
                try await waitUntil { deliveries.count(warm.token) >= clientCount }
                var latencies = Latencies()
                for index in 0..<rounds {
                    let (start, answered, token) = try await commit("Documents/\(index)")
                    try await waitUntil { deliveries.count(token) >= clientCount }
                    latencies.deliveries += deliveries.arrivals.withLock { $0[token] ?? [] }.map { $0 - start }
                    latencies.commits.append(answered)
                }
                deliveries.done.withLock { $0 = true }
                // One more commit wakes every client so it sees `done` and closes.
                _ = try await commit("Documents/end")
                return latencies
            }
            var result: Latencies?
            for try await latencies in group {
                if let latencies { result = latencies }
            }
            guard let result else { throw BenchError("no latencies") }
            return result
        }
    }

    /// Polls `condition` every millisecond, for at most a minute.
    static func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw BenchError("gave up waiting") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}
