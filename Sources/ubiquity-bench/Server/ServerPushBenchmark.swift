import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import Synchronization
import UbiquityProtocol
import UbiquityServer

/// `server.push`: from a commit to its push reaching each of 1,000 subscribed WebSocket clients on loopback
/// (p50 and p99 over every delivery of 20 commits).
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

    static func run(in scratch: URL) async throws {
        let server = try await BenchServer.start(in: scratch.appendingPathComponent("data"))
        let deliveries = Deliveries()
        let logger = {
            var logger = Logger(label: "ubiquity.bench.push")
            logger.logLevel = .critical
            return logger
        }()
        let url = "ws://127.0.0.1:\(server.port)/v1/push"
        let subscribe = String(
            decoding: try JSONEncoder().encode(PushMessage.subscribe(containers: [server.container])), as: UTF8.self)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<clientCount {
                group.addTask {
                    try await WebSocketClient.connect(
                        url: url, configuration: .init(additionalHeaders: [.authorization: "Bearer \(server.token)"]),
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
                }
            }
            group.addTask {
                try await waitUntil { deliveries.subscribed.withLock { $0 } == clientCount }
                var latencies: [Duration] = []
                for index in 0..<rounds {
                    let id = ItemID()
                    let start = ContinuousClock.now
                    let answer = try JSONDecoder().decode(
                        ItemResponse.self,
                        from: try await server.send(
                            .POST, server.url("items"),
                            json: CreateItemRequest(id: id, path: try ItemPath("Documents/\(index)"), kind: .directory))
                    )
                    try await waitUntil { deliveries.count(answer.token.string) == clientCount }
                    latencies += deliveries.arrivals.withLock { $0[answer.token.string] ?? [] }.map { $0 - start }
                }
                deliveries.done.withLock { $0 = true }
                // One more commit wakes every client so it sees `done` and closes.
                try await server.send(
                    .POST, server.url("items"),
                    json: CreateItemRequest(path: try ItemPath("Documents/end"), kind: .directory))
                let sorted = latencies.sorted()
                let p50 = sorted[sorted.count / 2]
                let p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
                let label = "\(clientCount) clients, \(rounds) commits"
                BenchOutput.figure(bench: name, case: label, metric: "p50_ms", value: Measure.microseconds(p50) / 1000)
                BenchOutput.figure(bench: name, case: label, metric: "p99_ms", value: Measure.microseconds(p99) / 1000)
            }
            try await group.waitForAll()
        }
        try await server.stop()
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
