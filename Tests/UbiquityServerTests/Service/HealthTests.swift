import Foundation
import HummingbirdTesting
import Logging
import Testing
import UbiquityProtocol
import UbiquityTestSupport

@testable import UbiquityServer

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Service: /health tells whether the node reaches its stores")
struct HealthTests {
    @Test("A node that reaches its database and chunk store answers 200 ok")
    func healthyNode() async throws {
        let server = try await TestServer.make()
        try await server.test(.router) { client in
            let response = try await client.executeRequest(uri: "/health", method: .get, headers: [:], body: nil)
            #expect(response.status == .ok)
            let report = try JSONDecoder().decode(HealthCheck.Report.self, from: Data(response.body.readableBytesView))
            #expect(report == HealthCheck.Report(status: "ok", database: "ok", chunks: "ok"))
        }
    }

    /// Behind a load balancer, a node that cannot reach its object storage must say so, so that traffic goes to
    /// the others.
    @Test("A node whose chunk store is out of reach answers 503, naming the store and why")
    func unreachableChunkStore() async throws {
        let (socket, port) = try Loopback.refusingPort()
        defer { close(socket) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-health-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteMetadataStore(path: directory.appendingPathComponent("ubiquity.sqlite").path)
        let chunks = S3ChunkStore(
            client: S3Client(
                .init(
                    endpoint: "http://127.0.0.1:\(port)", bucket: "nowhere",
                    credentials: .init(accessKey: "key", secretKey: "secret"))))
        var logger = Logger(label: "ubiquity.server.test")
        logger.logLevel = .critical
        let service = UbiquityService(
            configuration: ServerConfiguration(dataDirectory: directory, port: 0), store: store, chunks: chunks,
            logger: logger)
        try await service.makeApplication().test(.router) { client in
            let response = try await client.executeRequest(uri: "/health", method: .get, headers: [:], body: nil)
            #expect(response.status == .serviceUnavailable)
            let report = try JSONDecoder().decode(HealthCheck.Report.self, from: Data(response.body.readableBytesView))
            #expect(report.status == "unavailable")
            #expect(report.database == "ok")
            #expect(report.chunks.lowercased().contains("refused"), "\(report.chunks)")
        }
    }
}
