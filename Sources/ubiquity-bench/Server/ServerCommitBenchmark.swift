import Foundation
import NIOCore
import UbiquityProtocol
import UbiquityServer

/// `server.commits`: small items committed per second on the embedded default — over HTTP on loopback with
/// several concurrent devices' worth of requests, and straight into the store (the ceiling HTTP is measured
/// against). When `UBIQUITY_POSTGRES_URL` names a PostgreSQL database, the same again with the metadata there (in a
/// schema of the run's own), as a share of the embedded default's rates.
enum ServerCommitBenchmark {
    static let name = "server.commits"

    static func run(in scratch: URL) async throws {
        let embedded = try await measure(in: scratch.appendingPathComponent("data"), database: nil)
        figures(embedded, label: "")
        guard let url = ProcessInfo.processInfo.environment["UBIQUITY_POSTGRES_URL"], !url.isEmpty else { return }
        let schema = "bench_\(UUID().uuidString.prefix(8).lowercased())"
        let postgres = try await measure(
            in: scratch.appendingPathComponent("postgres"), database: url + "?schema=\(schema)")
        figures(postgres, label: "PostgreSQL, ")
        BenchOutput.figure(
            bench: name, case: "small item, HTTP, 16 concurrent", metric: "postgres_share_of_sqlite_rate",
            value: postgres.http / embedded.http)
        BenchOutput.figure(
            bench: name, case: "small item, store only", metric: "postgres_share_of_sqlite_rate",
            value: postgres.store / embedded.store)
    }

    private static func figures(_ rates: (http: Double, store: Double), label: String) {
        BenchOutput.figure(
            bench: name, case: "\(label)small item, HTTP, 16 concurrent", metric: "commits_per_second",
            value: rates.http)
        BenchOutput.figure(
            bench: name, case: "\(label)small item, store only", metric: "commits_per_second", value: rates.store)
        BenchOutput.figure(
            bench: name, case: "\(label)small item", metric: "http_share_of_store_rate", value: rates.http / rates.store
        )
    }

    /// Commits per second over HTTP and straight into the store, on a service in `directory`.
    private static func measure(in directory: URL, database: String?) async throws -> (http: Double, store: Double) {
        let server = try await BenchServer.start(in: directory, connections: 16, database: database)
        let chunk = try await server.upload(ByteBuffer(bytes: noiseBytes(count: 1024, seed: 1)))
        let contentHash = chunk.hash
        let count = 4000
        let concurrency = 16

        func version(of item: ItemID) -> VersionRecord {
            VersionRecord(
                id: VersionID(), itemID: item, manifest: .file([chunk]), contentHash: contentHash,
                modificationDate: Date(), savingDevice: server.device)
        }

        // Warm-up.
        for index in 0..<200 {
            let id = ItemID()
            try await server.send(
                .POST, server.url("items"),
                json: CreateItemRequest(
                    id: id, path: try ItemPath("warm/\(index)"), kind: .file, version: version(of: id)))
        }

        // Bodies are encoded before the clock starts: the figure is the service's, not the load generator's.
        let bodies = try (0..<count).map { index in
            let id = ItemID()
            let request = CreateItemRequest(
                id: id, path: try ItemPath("Documents/http/\(index).txt"), kind: .file, version: version(of: id))
            return ByteBuffer(bytes: try JSONEncoder().encode(request))
        }
        let clock = ContinuousClock()
        let overHTTP = try await clock.measure {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<concurrency {
                    group.addTask {
                        for index in stride(from: lane, to: count, by: concurrency) {
                            try await server.send(.POST, server.url("items"), body: bodies[index])
                        }
                    }
                }
                try await group.waitForAll()
            }
        }

        let key = ContainerKey(account: try await account(server), container: server.container)
        let direct = try await clock.measure {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<concurrency {
                    group.addTask {
                        for index in stride(from: lane, to: count, by: concurrency) {
                            let id = ItemID()
                            let request = CreateItemRequest(
                                id: id, path: try ItemPath("Documents/store/\(index).txt"), kind: .file,
                                version: version(of: id))
                            _ = try await server.service.store.createItem(request, in: key)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await server.stop()
        if database != nil { try await server.dropSchema() }
        return (Double(count) / seconds(overHTTP), Double(count) / seconds(direct))
    }

    static func account(_ server: BenchServer) async throws -> AccountID {
        try JSONDecoder().decode(AccountInfo.self, from: try await server.send(.GET, server.base + "/v1/account")).id
    }
}

/// A duration in seconds.
func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
