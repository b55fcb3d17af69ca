import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import UbiquityProtocol

/// Two `ubiquity server` processes on one PostgreSQL database and one S3 bucket, as an operator runs them.
@Suite(
    "Service: two node processes, one killed",
    .enabled(
        if: (StorageFixtures.postgresURL != nil && StorageFixtures.s3URL != nil) || StorageFixtures.isCI,
        "UBIQUITY_POSTGRES_URL or UBIQUITY_S3_URL is unset (.ci/run starts both servers)"))
struct NodeProcessesTests {
    @Test("a device whose node is killed with SIGKILL carries on through the other with the same token and feed")
    func deviceMovesToTheOtherNode() async throws {
        let postgres = try #require(StorageFixtures.postgresURL)
        let s3 = try #require(StorageFixtures.s3URL)
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-nodes-\(suffix)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        func start(_ name: String) async throws -> (ServerProcess, Wire) {
            let (process, port) = try await ServerProcess.startServer(
                [
                    "--data", root.appendingPathComponent(name).path, "--port", "0", "--bcrypt-cost", "4",
                    "--open-registration", "--log-level", "critical",
                    "--database", postgres + "?schema=processes_\(suffix)&pool=4",
                    "--chunks", s3 + "&prefix=tests/processes-\(suffix)",
                ], logs: root.appendingPathComponent("logs"), name: name)
            return (process, Wire(port: port))
        }
        let (first, one) = try await start("one")
        defer { first.killAndWait() }
        let (second, two) = try await start("two")
        defer { second.killAndWait() }

        _ = try await one.send(.POST, "/v1/accounts", RegisterRequest(name: "ada", password: "correct horse"))
        let login: LoginResponse = try await one.decode(
            .POST, "/v1/login", LoginRequest(name: "ada", password: "correct horse", deviceName: "laptop"))
        let container = "/v1/containers/TEAM.com.example.grocery"
        let folder: ItemResponse = try await one.decode(
            .POST, "\(container)/items", CreateItemRequest(path: try ItemPath("Documents/Trips"), kind: .directory),
            token: login.token)
        let written: KeyValueBatchResponse = try await one.decode(
            .POST, "\(container)/kv",
            KeyValueBatch(writes: [KeyValueWrite(key: "theme", value: .string("dark"), timestamp: Date())]),
            token: login.token)

        #expect(first.killAndWait(), "the first node died of SIGKILL")

        // The same token on the other node; the feed from the start has the folder, and from its token nothing.
        let all: ChangePage = try await two.decode(.GET, "\(container)/changes", token: login.token)
        #expect(all.changes.contains(.itemCreated(itemID: folder.item.id, path: folder.item.path, kind: .directory)))
        let since: ChangePage = try await two.decode(
            .GET, "\(container)/changes?since=\(folder.token)", token: login.token)
        #expect(since.changes.isEmpty)
        let values: KeyValueChanges = try await two.decode(.GET, "\(container)/kv", token: login.token)
        #expect(values.entries.map(\.key) == ["theme"])
        #expect(values.token == written.token)
        let next: ItemResponse = try await two.decode(
            .POST, "\(container)/items", CreateItemRequest(path: try ItemPath("Documents/Receipts"), kind: .directory),
            token: login.token)
        #expect(next.item.path.string == "Documents/Receipts")
    }

    /// JSON requests to one node.
    struct Wire: Sendable {
        let port: Int

        func send(_ method: HTTPMethod, _ path: String, _ body: (some Encodable)? = String?.none, token: String? = nil)
            async throws -> (status: HTTPResponseStatus, body: Data)
        {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
            request.method = method
            if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
            }
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let bytes = try await response.body.collect(upTo: 1 << 24)
            return (response.status, Data(bytes.readableBytesView))
        }

        func decode<T: Decodable>(
            _ method: HTTPMethod, _ path: String, _ body: (some Encodable)? = String?.none, token: String? = nil,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws -> T {
            let (status, data) = try await send(method, path, body, token: token)
            try #require(
                (200..<300).contains(Int(status.code)),
                "\(method) \(path): \(status) \(String(decoding: data, as: UTF8.self))", sourceLocation: sourceLocation)
            return try JSONDecoder().decode(T.self, from: data)
        }
    }
}
