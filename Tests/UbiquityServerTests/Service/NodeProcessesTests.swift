import AsyncHTTPClient
import Crypto
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
    @Test(
        "a device whose node is killed with SIGKILL in the middle of an upload carries on through the other: same token, feed and key-value position, only the unfinished chunk sent again, no version with a missing chunk"
    )
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

        // A version of three chunks: two uploaded through the first node, the third half sent when it dies.
        let pieces = (0..<3).map { _ in (0..<(256 << 10)).map { _ in UInt8.random(in: .min ... .max) } }
        let references = try pieces.map {
            ChunkReference(hash: try ChunkHash(digest: SHA256.hash(data: $0)), size: Int64($0.count))
        }
        for index in 0..<2 {
            let (status, body) = try await one.put(
                "\(container)/chunks/\(references[index].hash)", pieces[index], login.token)
            #expect(status == .created, "\(String(decoding: body, as: UTF8.self))")
        }
        let (unfinished, feeder) = AsyncStream.makeStream(of: ByteBuffer.self)
        feeder.yield(ByteBuffer(bytes: pieces[2].prefix(pieces[2].count / 2)))
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(one.port)\(container)/chunks/\(references[2].hash)")
        request.method = .PUT
        request.headers.add(name: "Authorization", value: "Bearer \(login.token)")
        request.body = .stream(unfinished, length: .known(Int64(pieces[2].count)))
        let stalled = Task { [request] in try await HTTPClient.shared.execute(request, timeout: .seconds(60)) }
        try await one.waitForUploadedBytes(atLeast: 2 * pieces[0].count + pieces[2].count / 2)

        #expect(first.killAndWait(), "the first node died of SIGKILL")
        feeder.finish()
        _ = await stalled.result

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

        // The other node has the two finished chunks and not the third; the version cannot be committed without it.
        let missing: MissingChunksResponse = try await two.decode(
            .POST, "\(container)/chunks/missing", MissingChunksRequest(chunks: references), token: login.token)
        #expect(missing.missing == [references[2].hash], "only the unfinished chunk is to be sent again")
        let itemID = ItemID()
        let create = CreateItemRequest(
            id: itemID, path: try ItemPath("Documents/Trips/Map.bin"), kind: .file,
            version: VersionRecord(
                id: VersionID(), itemID: itemID, manifest: .file(references),
                contentHash: try ChunkHash(digest: SHA256.hash(data: pieces.flatMap { $0 })),
                modificationDate: Date(), savingDevice: login.info.device))
        let refused = try await two.send(.POST, "\(container)/items", create, token: login.token)
        #expect(refused.status == .conflict)
        #expect(try JSONDecoder().decode(ProtocolError.self, from: refused.body).missingChunks == [references[2].hash])
        let listed: ItemListResponse = try await two.decode(.GET, "\(container)/items", token: login.token)
        #expect(!listed.items.contains { $0.id == itemID }, "no version with a missing chunk is visible")
        let (status, _) = try await two.put("\(container)/chunks/\(references[2].hash)", pieces[2], login.token)
        #expect(status == .created)
        let created: ItemResponse = try await two.decode(.POST, "\(container)/items", create, token: login.token)
        #expect(created.outcome == .current)
        var downloaded: [UInt8] = []
        for reference in references {
            downloaded += try await two.send(.GET, "\(container)/chunks/\(reference.hash)", token: login.token).body
        }
        #expect(downloaded == pieces.flatMap { $0 }, "the content reads back whole through the other node")
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
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(600))
            let bytes = try await response.body.collect(upTo: 1 << 24)
            return (response.status, Data(bytes.readableBytesView))
        }

        /// Uploads `bytes` as the body of a PUT.
        func put(_ path: String, _ bytes: [UInt8], _ token: String) async throws -> (
            status: HTTPResponseStatus, body: Data
        ) {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
            request.method = .PUT
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.body = .bytes(ByteBuffer(bytes: bytes))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(600))
            let body = try await response.body.collect(upTo: 1 << 20)
            return (response.status, Data(body.readableBytesView))
        }

        /// Returns once the node's `/metrics` counts at least `count` bytes of chunk uploads received (what it reports
        /// as the bytes arrive, before any upload finishes).
        func waitForUploadedBytes(atLeast count: Int) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                let text = String(decoding: try await send(.GET, "/metrics").body, as: UTF8.self)
                let received =
                    text.split(separator: "\n")
                    .first { $0.hasPrefix("ubiquity_chunk_upload_bytes_total ") }
                    .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
                if received >= Double(count) { return }
                // A poll: the node is another process, and the bytes it has received are reported only in its
                // /metrics, which announces nothing.
                try await Task.sleep(for: .milliseconds(20))
            }
            Issue.record("the node never reported \(count) bytes of uploads received")
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
