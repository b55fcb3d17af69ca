import AsyncHTTPClient
import ChildProcess
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing
import UbiquityProtocol
import UbiquityServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Hostile requests: each is refused with its stable code and status, and leaves the container as it was.
@Suite("Service: hostile input is refused with a stable code and changes nothing")
struct BadInputTests {
    /// One hostile request and the refusal it must get.
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var method: HTTPRequest.Method
        var uri: String
        var body: ByteBuffer?
        var code: ProtocolError.Code
        var status: HTTPResponse.Status
        /// For ``ProtocolError/Code/chunksMissing``: the exact list the refusal names.
        var missingChunks: [ChunkHash]? = nil
        /// Chunks the request tried to store, which must still be missing afterwards.
        var stillMissing: [ChunkReference] = []

        var description: String { "\(name) (\(method) \(uri.prefix(160)))" }
    }

    static let chunkLimit = 1024
    static let jsonLimit = 2 << 20
    static let chunksPerRequest = 100

    @Test(
        "Every hostile request of the table is refused with its code and status, and changes nothing",
        arguments: ServiceStorage.available)
    func hostileRequestsAreRefused(storage: ServiceStorage) async throws {
        let server = try await TestServer.make(storage: storage) {
            $0.limits.chunkBytes = Self.chunkLimit
            $0.limits.jsonBodyBytes = Self.jsonLimit
            $0.limits.chunksPerRequest = Self.chunksPerRequest
        }
        try await server.test { client in
            let seed = try await Self.seed(client)
            let cases = try Self.cases(seed)
            #expect(cases.count > 100)
            for testCase in cases {
                try await Self.check(testCase, on: seed.device)
            }
        }
    }

    @Test(
        "An upload over the quota is refused before anything is stored, and the used bytes do not move",
        arguments: ServiceStorage.available)
    func overQuotaUploadIsRefused(storage: ServiceStorage) async throws {
        let server = try await TestServer.make(storage: storage) { $0.defaultQuotaBytes = 3000 }
        try await server.test { client in
            let ada = try await Device.signIn(client, account: "ada", device: "Ada's laptop")
            _ = try await ada.create("Documents/Big.txt", Self.bytes(2000, seed: 1))
            let used = try await ada.send(.get, "/v1/account").decode(AccountInfo.self)
            #expect(used.usedBytes == 2000)
            #expect(used.quotaBytes == 3000)

            let extra = Self.bytes(1500, seed: 2)
            let reference = ChunkReference(hash: try Device.hash(extra), size: 1500)
            let cases = [
                Case(
                    name: "asking about a chunk that does not fit", method: .post,
                    uri: ada.path("chunks/missing"),
                    body: try Self.json(MissingChunksRequest(chunks: [reference])), code: .quotaExceeded,
                    status: Self.insufficientStorage, stillMissing: [reference]),
                Case(
                    name: "asking about a fitting and a not fitting chunk", method: .post,
                    uri: ada.path("chunks/missing"),
                    body: try Self.json(
                        MissingChunksRequest(chunks: [
                            ChunkReference(hash: try Device.hash(Self.bytes(500, seed: 3)), size: 500), reference,
                        ])), code: .quotaExceeded, status: Self.insufficientStorage, stillMissing: [reference]),
                Case(
                    name: "uploading a chunk that does not fit", method: .put,
                    uri: ada.path("chunks/\(reference.hash)"), body: ByteBuffer(bytes: extra), code: .quotaExceeded,
                    status: Self.insufficientStorage, stillMissing: [reference]),
            ]
            for testCase in cases {
                try await Self.check(testCase, on: ada)
            }
            #expect(try await ada.send(.get, "/v1/account").decode(AccountInfo.self) == used)

            // What fits is still accepted.
            let fitting = try await ada.create("Documents/Small.txt", Self.bytes(900, seed: 4))
            #expect(fitting.outcome == .current)
            #expect(try await ada.send(.get, "/v1/account").decode(AccountInfo.self).usedBytes == 2900)
        }
    }

    @Test(
        "Concurrent uploads share the quota: those that do not fit beside the others are refused, none is stored",
        arguments: ServiceStorage.available)
    func concurrentUploadsShareTheQuota(storage: ServiceStorage) async throws {
        let server = try await TestServer.make(storage: storage) { $0.defaultQuotaBytes = 3000 }
        try await server.test(.live) { client in
            let port = try #require(client.port)
            let ada = try await Device.signIn(client, account: "ada", device: "Ada's laptop")
            let pieces = (0..<8).map { Self.bytes(1000, seed: 100 + $0) }
            // Each upload on a connection of its own, so that they are under way at the service at once (the test
            // client's one connection would send them one after another).
            let answers = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for piece in pieces {
                    group.addTask {
                        var request = HTTPClientRequest(
                            url: "http://127.0.0.1:\(port)\(ada.path("chunks/\(try Device.hash(piece))"))")
                        request.method = .PUT
                        request.headers.add(name: "Authorization", value: "Bearer \(ada.token)")
                        request.body = .bytes(ByteBuffer(bytes: piece))
                        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(600))
                        _ = try await response.body.collect(upTo: 1 << 20)
                        return HTTPResponse.Status(code: Int(response.status.code))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let stored = answers.filter { $0 == .created }.count
            #expect(stored <= 3, "\(answers)")
            #expect(stored + answers.filter { $0 == Self.insufficientStorage }.count == 8, "\(answers)")
            let used = try await ada.send(.get, "/v1/account").decode(AccountInfo.self).usedBytes
            #expect(used == Int64(stored * 1000) && used <= 3000)
            let store = try #require(server.service.chunks as? FileChunkStore)
            var onDisk = 0
            for piece in pieces where try await store.contains(try Device.hash(piece), of: ada.info.accountID) {
                onDisk += 1
            }
            #expect(onDisk == stored, "a refused upload's bytes were kept")
        }
    }

    @Test(
        "An over-quota chunk streamed without a Content-Length is refused and leaves nothing on disk",
        arguments: ServiceStorage.available)
    func overQuotaStreamedChunkLeavesNothing(storage: ServiceStorage) async throws {
        let server = try await TestServer.make(storage: storage) { $0.defaultQuotaBytes = 3000 }
        try await server.test(.live) { client in
            let port = try #require(client.port)
            let ada = try await Device.signIn(client, account: "ada", device: "Ada's laptop")
            _ = try await ada.create("Documents/Big.txt", Self.bytes(2000, seed: 1))
            let before = try await AuthorizationTests.snapshot(ada)

            let extra = Self.bytes(1500, seed: 2)
            let hash = try Device.hash(extra)
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(ada.path("chunks/\(hash)"))")
            request.method = .PUT
            request.headers.add(name: "Authorization", value: "Bearer \(ada.token)")
            let pieces = [Array(extra[..<700]), Array(extra[700...])].map { ByteBuffer(bytes: $0) }
            let stream = AsyncStream<ByteBuffer> { continuation in
                for piece in pieces { continuation.yield(piece) }
                continuation.finish()
            }
            request.body = .stream(stream, length: .unknown)
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(600))
            let body = try await response.body.collect(upTo: 1 << 20)
            let answer = Answer(
                status: HTTPResponse.Status(code: Int(response.status.code)), body: Data(body.readableBytesView))
            Self.expectRefusal(answer, .quotaExceeded, Self.insufficientStorage, "a streamed over-quota chunk")

            #expect(try await AuthorizationTests.snapshot(ada) == before, "the refused upload changed the account")
            let missing = try await ada.send(
                .post, ada.path("chunks/missing"),
                json: MissingChunksRequest(chunks: [ChunkReference(hash: hash, size: 0)])
            ).decode(MissingChunksResponse.self)
            #expect(missing.missing == [hash])
            let store = try #require(server.service.chunks as? FileChunkStore)
            let file = store.location(of: hash, of: ada.info.accountID)
            #expect(
                !FileManager.default.fileExists(atPath: file.path),
                "the refused chunk's bytes were kept on disk at \(file.path), outside the quota")
            #expect(
                try store.packedLocation(of: hash, of: ada.info.accountID) == nil,
                "the refused chunk's bytes were packed, outside the quota")
        }
    }

    @Test("A password is compared whole: what follows a NUL in it is not ignored", arguments: ServiceStorage.available)
    func passwordWithNULIsNotCutShort(storage: ServiceStorage) async throws {
        try await TestServer.make(storage: storage).test { client in
            // (account, registered password, passwords that must not sign in)
            let accounts: [(String, String, [String])] = [
                ("eve", "correct horse\u{0}battery staple", ["correct horse", "correct horse\u{0}wrong"]),
                ("zed", "\u{0}correct horse", ["", "\u{0}", "\u{0}anything"]),
            ]
            for (account, password, wrong) in accounts {
                let registered = try await Device.send(
                    client, .post, "/v1/accounts", json: RegisterRequest(name: account, password: password))
                let shown = password.replacingOccurrences(of: "\u{0}", with: "\\0")
                if registered.status != .created {
                    Self.expectRefusal(
                        registered, .invalidAccount, .badRequest, "registering the password \"\(shown)\"")
                    continue
                }
                for attempt in wrong {
                    let login = try await Device.send(
                        client, .post, "/v1/login",
                        json: LoginRequest(name: account, password: attempt, deviceName: "x"))
                    Self.expectRefusal(
                        login, .invalidCredentials, .unauthorized,
                        "signing in to \(account) (password \"\(shown)\") with "
                            + "\"\(attempt.replacingOccurrences(of: "\u{0}", with: "\\0"))\"")
                }
            }
        }
    }

    /// Chunk sizes whose sum does not fit in 64 bits, asked about with a quota in force.
    static let overflowingQuestions: [(name: String, sizes: [Int64])] = [
        ("one chunk of Int64.max bytes on top of stored bytes", [.max]),
        ("two chunks of Int64.max bytes", [.max, .max]),
        ("chunks whose sizes add up past Int64.max", [.max / 2 + 1, .max / 2 + 1]),
    ]

    @Test(
        "Chunk sizes that overflow when added up are refused (a size no chunk can have, or over the quota), and the service keeps running",
        arguments: overflowingQuestions.indices)
    func overflowingChunkSizesAreRefused(index: Int) async throws {
        let (name, sizes) = Self.overflowingQuestions[index]
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-bad-input-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let child = try ChildServer(
            [
                "server", "serve", "--data", directory.appendingPathComponent("data").path, "--port", "0",
                "--open-registration", "--bcrypt-cost", "4", "--default-quota", "1000000", "--log-level", "critical",
            ],
            logs: directory)
        defer { child.stop() }
        let port = try await child.port()
        let base = "http://127.0.0.1:\(port)"

        _ = try await Self.call(
            base + "/v1/accounts", method: "POST", body: #"{"name": "ada", "password": "correct horse"}"#.bytes)
        let login = try await Self.call(
            base + "/v1/login", method: "POST",
            body: #"{"name": "ada", "password": "correct horse", "deviceName": "laptop"}"#.bytes)
        let token = try login.decode(LoginResponse.self).token
        let chunks = base + "/v1/containers/\(Device.defaultContainer)/chunks"
        let stored = "some bytes".bytes
        let upload = try await Self.call(
            chunks + "/\(try Device.hash(stored))", method: "PUT", token: token, body: stored)
        #expect(upload.status == .created)

        let question = MissingChunksRequest(
            chunks: try sizes.enumerated().map {
                ChunkReference(hash: try Device.hash("overflowing \($0.offset)".bytes), size: $0.element)
            })
        let answer: Answer
        do {
            answer = try await Self.call(
                chunks + "/missing", method: "POST", token: token, body: Array(try JSONEncoder().encode(question)))
        } catch {
            child.waitForExit()
            Issue.record(
                "\(name): no answer (\(error)); the service \(child.isRunning ? "runs" : "died"): \(child.crashSummary)"
            )
            return
        }
        #expect(answer.error != nil, "\(name): the body is not a ProtocolError: \(answer.text)")
        // A size beyond any chunk is malformed; a service that does not check sizes must still refuse on the quota.
        let refusals: [ProtocolError.Code: HTTPResponse.Status] = [
            .malformedRequest: .badRequest, .quotaExceeded: Self.insufficientStorage,
        ]
        let code = answer.error?.code ?? .internalError
        #expect(refusals[code] != nil, "\(name): expected malformedRequest or quotaExceeded, got \(answer.text)")
        #expect(answer.status == refusals[code], "\(name): \(code) with \(answer.status)")
        let health = try await Self.call(base + "/health", method: "GET")
        #expect(health.status == .ok, "\(name): the service stopped answering")
        #expect(child.isRunning, "\(name): the service died: \(child.crashSummary)")
    }

    /// One request to a child server, on a connection of its own.
    static func call(_ url: String, method: String, token: String? = nil, body: [UInt8]? = nil) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .RAW(value: method)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(600))
        let collected = try await response.body.collect(upTo: 1 << 20)
        return Answer(
            status: HTTPResponse.Status(code: Int(response.status.code)), body: Data(collected.readableBytesView))
    }

    /// The `ubiquity` executable built beside the tests, run as a child process, so a crash it suffers is observed
    /// instead of ending the test run.
    final class ChildServer: Sendable {
        private let process: ChildProcess
        private let output: URL
        private let errors: URL

        init(_ arguments: [String], logs: URL) throws {
            try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
            output = logs.appendingPathComponent("server.out")
            errors = logs.appendingPathComponent("server.err")
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
            #if os(Linux)
                let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
                let products = URL(fileURLWithPath: own).deletingLastPathComponent()
            #else
                let bundle = Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") } ?? Bundle.main
                let products = bundle.bundleURL.deletingLastPathComponent()
            #endif
            process = try ChildProcess(
                products.appendingPathComponent("ubiquity"), arguments: arguments, standardInput: .nullDevice,
                standardOutput: .file(output), standardError: .file(errors))
        }

        var isRunning: Bool { process.isRunning }

        /// The port announced on standard output (`ubiquity server listening on http://HOST:PORT …`), waiting until
        /// the server announces it or exits. The deadline only guards against a hang: on a loaded two-core machine a
        /// debug server started while the whole suite starts can take half a minute to listen.
        func port() async throws -> Int {
            let deadline = ContinuousClock.now.advanced(by: .seconds(300))
            while ContinuousClock.now < deadline, process.isRunning {
                let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
                for line in text.split(separator: "\n") where line.hasPrefix("ubiquity server listening on ") {
                    let address = line.split(separator: " ")[4]
                    if let port = address.split(separator: ":").last.flatMap({ Int($0) }) { return port }
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            throw ChildServerFailure(
                description: "the server announced no port (\(process.isRunning ? "still running" : "exited")): "
                    + crashSummary)
        }

        /// Where the child crashed, from its standard error.
        var crashSummary: String {
            let text = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n").filter {
                $0.contains("crashed") || $0.contains("Fatal error") || $0.contains("/Sources/UbiquityServer/")
            }
            return lines.prefix(4).joined(separator: " | ")
        }

        func waitForExit(timeout: Duration = .seconds(30)) {
            let deadline = ContinuousClock.now.advanced(by: timeout)
            while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        }

        func stop() {
            if process.isRunning {
                process.terminate()
                waitForExit(timeout: .seconds(10))
            }
        }
    }

    struct ChildServerFailure: Error, CustomStringConvertible {
        var description: String
    }

    // MARK: Checking one case

    /// Sends the case's request and checks the refusal and that nothing the account can read changed.
    static func check(_ testCase: Case, on device: Device) async throws {
        let before = try await AuthorizationTests.snapshot(device)
        var headers: HTTPFields = [.authorization: "Bearer \(device.token)"]
        if testCase.body != nil, testCase.method != .put { headers[.contentType] = "application/json" }
        let response = try await device.client.executeRequest(
            uri: testCase.uri, method: testCase.method, headers: headers, body: testCase.body)
        let answer = Answer(status: response.status, body: Data(response.body.readableBytesView))

        #expect(answer.status != .internalServerError, "\(testCase): the service failed: \(answer.text)")
        #expect(answer.error != nil, "\(testCase): the body is not a ProtocolError: \(answer.text.prefix(300))")
        expectRefusal(answer, testCase.code, testCase.status, "\(testCase)")
        if let missing = testCase.missingChunks {
            #expect(answer.error?.missingChunks == missing, "\(testCase): \(answer.text)")
        }

        let after = try await AuthorizationTests.snapshot(device)
        #expect(after == before, "\(testCase): the refused request changed the container")
        if !testCase.stillMissing.isEmpty {
            let missing = try await device.send(
                .post, device.path("chunks/missing"),
                json: MissingChunksRequest(chunks: testCase.stillMissing.map { ChunkReference(hash: $0.hash, size: 0) })
            ).decode(MissingChunksResponse.self)
            #expect(
                missing.missing == testCase.stillMissing.map(\.hash), "\(testCase): the chunk is no longer missing")
            for chunk in testCase.stillMissing {
                let download = try await device.send(.get, device.path("chunks/\(chunk.hash)"))
                expectRefusal(download, .chunkNotFound, .notFound, "\(testCase): downloading \(chunk.hash)")
            }
        }
    }

    static func expectRefusal(
        _ answer: Answer, _ code: ProtocolError.Code, _ status: HTTPResponse.Status, _ label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            answer.status == status, "\(label): expected \(status), got \(answer.status) \(answer.text.prefix(300))",
            sourceLocation: sourceLocation)
        #expect(
            answer.error?.code == code, "\(label): expected \(code), got \(answer.text.prefix(300))",
            sourceLocation: sourceLocation)
    }

    static let insufficientStorage = HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")

    // MARK: The container's data

    struct Seed: Sendable {
        var device: Device
        /// `Documents/List.txt`, a file.
        var list: ItemRecord
        var listVersion: VersionRecord
        /// `Documents/café.txt` (NFC), a file.
        var cafe: ItemRecord
        /// `Documents/Gone.txt`, deleted.
        var gone: ItemRecord
        /// A feed token of the container, after the seed's changes.
        var feedToken: ChangeToken
        /// A key-value token of the container.
        var keyValueToken: ChangeToken
        /// A feed token of another container of the same account, past its beginning.
        var otherContainerToken: ChangeToken
    }

    static func seed(_ client: any ServiceTestClient) async throws -> Seed {
        let ada = try await Device.signIn(client, account: "ada", device: "Ada's laptop")
        let list = try await ada.create("Documents/List.txt", "milk".bytes)
        let cafe = try await ada.create("Documents/café.txt", "croissant".bytes)
        let gone = try await ada.create("Documents/Gone.txt", "gone".bytes)
        let deleted = try await ada.send(
            .delete, ada.path("items/\(gone.item.id)?basedOn=\(try #require(gone.item.currentVersion))")
        ).decode(ItemResponse.self)
        let keyValues = try await ada.send(
            .post, ada.path("kv"),
            json: KeyValueBatch(writes: [KeyValueWrite(key: "theme", value: .string("dark"), timestamp: Date())])
        ).decode(KeyValueBatchResponse.self)
        let other = Device(
            client: client, token: ada.token, info: ada.info, container: try ContainerID("TEAM.com.example.other"))
        _ = try await other.create("Documents/Elsewhere.txt", "elsewhere".bytes)
        let otherToken = try await other.create("Documents/Elsewhere 2.txt", "elsewhere 2".bytes).token
        return Seed(
            device: ada, list: list.item, listVersion: try #require(list.version), cafe: cafe.item,
            gone: deleted.item, feedToken: deleted.token, keyValueToken: keyValues.token,
            otherContainerToken: otherToken)
    }

    // MARK: The table

    static func cases(_ seed: Seed) throws -> [Case] {
        let ada = seed.device
        let items = ada.path("items")
        let list = ada.path("items/\(seed.list.id)")
        var cases: [Case] = []

        func add(
            _ name: String, _ method: HTTPRequest.Method, _ uri: String, _ body: ByteBuffer? = nil,
            _ code: ProtocolError.Code, _ status: HTTPResponse.Status = .badRequest,
            missingChunks: [ChunkHash]? = nil, stillMissing: [ChunkReference] = []
        ) {
            cases.append(
                Case(
                    name: name, method: method, uri: uri, body: body, code: code, status: status,
                    missingChunks: missingChunks, stillMissing: stillMissing))
        }
        let validItem: [String: Any] = ["id": ItemID().string, "path": "Documents/New.txt", "kind": "file"]
        func newItem(_ changes: [String: Any?]) throws -> ByteBuffer {
            var object = validItem
            for (key, value) in changes { object[key] = value }
            return try body(object)
        }

        // Bodies that are not JSON, or not the JSON the route takes.
        add("malformed JSON", .post, items, text("{"), .malformedRequest)
        add("not JSON at all", .post, items, text("milk, eggs"), .malformedRequest)
        add("an empty body", .post, items, ByteBuffer(), .malformedRequest)
        add("no body", .post, items, nil, .malformedRequest)
        add("a JSON array", .post, items, text("[]"), .malformedRequest)
        add("JSON null", .post, items, text("null"), .malformedRequest)
        add("bytes that are not UTF-8", .post, items, ByteBuffer(bytes: [0xFF, 0xFE, 0x7B, 0x00]), .malformedRequest)
        add("an id that is a number", .post, items, try newItem(["id": 42]), .malformedRequest)
        add("a path that is an array", .post, items, try newItem(["path": ["Documents", "x"]]), .malformedRequest)
        add("a kind that is a number", .post, items, try newItem(["kind": 1]), .malformedRequest)
        add("a missing id", .post, items, try newItem(["id": nil]), .malformedRequest)
        add("a missing path", .post, items, try newItem(["path": nil]), .malformedRequest)
        add("a missing kind", .post, items, try newItem(["kind": nil]), .malformedRequest)
        add("the unknown kind \"folder\"", .post, items, try newItem(["kind": "folder"]), .malformedRequest)
        add("an id that is not a UUID", .post, items, try newItem(["id": "not-a-uuid"]), .invalidIdentifier)
        add("a move without a path", .patch, list, text("{}"), .malformedRequest)
        add("a move to a number", .patch, list, text(#"{"path": 7}"#), .malformedRequest)
        add("a commit of an empty object", .post, list + "/versions", text("{}"), .malformedRequest)
        add(
            "a replace naming a number", .post, list + "/current", text(#"{"versionID": 5}"#), .malformedRequest)
        add(
            "a chunk question with chunks a string", .post, ada.path("chunks/missing"), text(#"{"chunks": "all"}"#),
            .malformedRequest)
        add(
            "a key-value write without a timestamp", .post, ada.path("kv"),
            text(#"{"writes": [{"key": "a", "value": {"type": "string", "value": "b"}}]}"#), .malformedRequest)

        // Item paths that break a rule, created and moved to.
        let longComponent = "Documents/" + String(repeating: "a", count: 256)
        let longMultibyteComponent = "Documents/" + String(repeating: "é", count: 128)
        let longPath =
            "Documents/"
            + [255, 255, 255, 247].enumerated().map {
                String(repeating: Character(UnicodeScalar(UInt8(97 + $0.offset))), count: $0.element)
            }.joined(separator: "/")
        #expect(longPath.utf8.count == 1025)
        let badPaths: [(String, String, ProtocolError.Code)] = [
            ("\"../x\"", "../x", .pathComponentDot),
            ("\"/abs\"", "/abs", .pathAbsolute),
            ("\"a//b\"", "a//b", .pathComponentEmpty),
            ("\"a/./b\"", "a/./b", .pathComponentDot),
            ("\"Documents/..\"", "Documents/..", .pathComponentDot),
            ("a trailing slash", "Documents/", .pathComponentEmpty),
            ("an empty path", "", .pathEmpty),
            ("a NUL", "Documents/\u{0}x", .pathControlCharacter),
            ("a newline", "Documents/a\nb", .pathControlCharacter),
            ("a DEL", "Documents/a\u{7F}b", .pathControlCharacter),
            ("a C1 control", "Documents/a\u{85}b", .pathControlCharacter),
            ("a 256-byte component", longComponent, .pathComponentTooLong),
            ("a 256-byte component of 128 characters", longMultibyteComponent, .pathComponentTooLong),
            ("a 1025-byte path", longPath, .pathTooLong),
            ("\".ubiquity/x\"", ".ubiquity/x", .pathReserved),
            ("\".ubiquity\"", ".ubiquity", .pathReserved),
            ("\".Ubiquity/x\"", ".Ubiquity/x", .pathReserved),
        ]
        for (name, path, code) in badPaths {
            add("creating at \(name)", .post, items, try newItem(["path": path]), code)
            add("moving to \(name)", .patch, list, try body(["path": path]), code)
        }

        // Paths that differ from an existing sibling only by case or normalisation.
        let collisions: [(String, String)] = [
            ("the NFD spelling of Documents/café.txt", "Documents/cafe\u{301}.txt"),
            ("Documents/CAFÉ.txt", "Documents/CAFÉ.txt"),
            ("documents/List.txt", "documents/List.txt"),
            ("Documents/list.txt", "Documents/list.txt"),
            ("DOCUMENTS/LIST.TXT", "DOCUMENTS/LIST.TXT"),
            ("the same path as an existing item", "Documents/List.txt"),
            ("a path inside a file", "Documents/List.txt/inside.txt"),
        ]
        for (name, path) in collisions {
            add("creating at \(name)", .post, items, try newItem(["path": path]), .pathCollision, .conflict)
        }
        let cafe = ada.path("items/\(seed.cafe.id)")
        add(
            "moving café to Documents/LIST.txt", .patch, cafe, try body(["path": "Documents/LIST.txt"]), .pathCollision,
            .conflict)
        add(
            "moving café to documents/café.txt", .patch, cafe, try body(["path": "documents/café.txt"]), .pathCollision,
            .conflict)
        add(
            "moving café onto List.txt", .patch, cafe, try body(["path": "Documents/List.txt"]), .pathCollision,
            .conflict)
        add(
            "creating List.txt's id at another path", .post, items,
            try json(CreateItemRequest(id: seed.list.id, path: try ItemPath("Documents/Other.txt"), kind: .file)),
            .itemExists, .conflict)

        // Identifiers in the URL.
        let validMove = try body(["path": "Documents/Moved.txt"])
        add("an item id that is not a UUID", .get, ada.path("items/not-a-uuid"), nil, .invalidIdentifier)
        add("moving an item id that is not a UUID", .patch, ada.path("items/not-a-uuid"), validMove, .invalidIdentifier)
        add("deleting an item id that is not a UUID", .delete, ada.path("items/1234"), nil, .invalidIdentifier)
        add("a version id that is not a UUID", .get, list + "/versions/zzz", nil, .invalidIdentifier)
        add("removing a version id that is not a UUID", .delete, list + "/versions/zzz", nil, .invalidIdentifier)
        add("resolving a version id that is not a UUID", .post, list + "/versions/zzz/resolve", nil, .invalidIdentifier)
        add(
            "committing to an item id that is not a UUID", .post, ada.path("items/12345/versions"),
            try json(seed.listVersion), .invalidIdentifier)
        add("a delete based on a garbage version", .delete, list + "?basedOn=garbage", nil, .invalidIdentifier)
        add("an unknown item", .get, ada.path("items/\(ItemID())"), nil, .itemNotFound, .notFound)
        add("an unknown version", .get, list + "/versions/\(VersionID())", nil, .unknownVersion, .notFound)
        add("a token id that is not a UUID", .delete, "/v1/tokens/not-a-uuid", nil, .tokenNotFound, .notFound)
        add("an unknown token id", .delete, "/v1/tokens/\(UUID())", nil, .tokenNotFound, .notFound)
        add("a container id without a dot", .get, "/v1/containers/grocery/items", nil, .invalidContainerID)
        add("a container id with an empty part", .get, "/v1/containers/TEAM..grocery/items", nil, .invalidContainerID)
        add(
            "a container id of 300 characters", .get,
            "/v1/containers/TEAM.\(String(repeating: "x", count: 295))/items", nil, .invalidContainerID)

        // Versions that contradict themselves or their item.
        let version = try object(seed.listVersion)
        func versionBody(_ changes: [String: Any?]) throws -> ByteBuffer {
            var object = version
            object["id"] = VersionID().string
            object["basedOn"] = seed.listVersion.id.string
            for (key, value) in changes { object[key] = value }
            return try body(object)
        }
        let listChunk = seed.listVersion.manifest.chunks[0]
        let versions = list + "/versions"
        add(
            "a version of another item than the URL's", .post, versions,
            try versionBody(["itemID": seed.cafe.id.string]), .invalidRecord)
        add(
            "a version whose size disagrees with its manifest", .post, versions,
            try versionBody(["size": listChunk.size + 1]), .invalidRecord)
        add(
            "a manifest with a negative chunk size", .post, versions,
            try versionBody([
                "size": -1,
                "manifest": ["type": "file", "chunks": [["hash": listChunk.hash.string, "size": -1]]],
            ]), .invalidManifest)
        add(
            "a manifest of the unknown type \"folder\"", .post, versions,
            try versionBody(["manifest": ["type": "folder", "chunks": [] as [Any]], "size": 0]), .invalidManifest)
        add(
            "a package manifest for a file", .post, versions,
            try versionBody(["manifest": ["type": "package", "entries": [] as [Any]], "size": 0]), .kindMismatch)
        add(
            "a modification date that is not a wire timestamp", .post, versions,
            try versionBody(["modificationDate": "yesterday"]), .invalidTimestamp)
        add(
            "a content hash that is not a hash", .post, versions, try versionBody(["contentHash": "xyz"]),
            .invalidChunkHash)
        add("a base that is not a UUID", .post, versions, try versionBody(["basedOn": "garbage"]), .invalidIdentifier)
        add(
            "a known version id with other content", .post, versions,
            try versionBody(["id": seed.listVersion.id.string, "contentHash": try Device.hash("other".bytes).string]),
            .versionExists, .conflict)
        let folderID = ItemID()
        var folderVersion = seed.listVersion
        folderVersion.id = VersionID()
        folderVersion.itemID = folderID
        add(
            "a new directory with a version", .post, items,
            try json(
                CreateItemRequest(
                    id: folderID, path: try ItemPath("Documents/Folder"), kind: .directory, version: folderVersion)),
            .kindMismatch)

        // Commits naming chunks never uploaded.
        let never1 = ChunkReference(hash: try Device.hash("never uploaded 1".bytes), size: 16)
        let never2 = ChunkReference(hash: try Device.hash("never uploaded 2".bytes), size: 16)
        let chunks = [listChunk, never1, never2, never1]
        add(
            "a commit naming chunks never uploaded", .post, versions,
            try versionBody([
                "manifest": try object(ContentManifest.file(chunks)), "size": chunks.reduce(0) { $0 + $1.size },
            ]), .chunksMissing, .conflict, missingChunks: [never1.hash, never2.hash],
            stillMissing: [never1, never2])
        let newID = ItemID()
        var newVersion = seed.listVersion
        newVersion.id = VersionID()
        newVersion.itemID = newID
        newVersion.manifest = .file([never2, listChunk])
        add(
            "a new item whose version names a chunk never uploaded", .post, items,
            try json(
                CreateItemRequest(id: newID, path: try ItemPath("Documents/New.txt"), kind: .file, version: newVersion)),
            .chunksMissing, .conflict, missingChunks: [never2.hash], stillMissing: [never2])

        // Chunks.
        let expected = "the bytes announced".bytes
        let expectedChunk = ChunkReference(hash: try Device.hash(expected), size: Int64(expected.count))
        add(
            "a chunk whose bytes do not match the hash in the URL", .put, ada.path("chunks/\(expectedChunk.hash)"),
            ByteBuffer(bytes: "other bytes".bytes), .chunkHashMismatch, stillMissing: [expectedChunk])
        add(
            "a chunk whose bytes are one byte short", .put, ada.path("chunks/\(expectedChunk.hash)"),
            ByteBuffer(bytes: expected.dropLast()), .chunkHashMismatch, stillMissing: [expectedChunk])
        let good = "a good chunk".bytes
        let goodChunk = ChunkReference(hash: try Device.hash(good), size: Int64(good.count))
        func batch(_ parts: [(ChunkHash, [UInt8])]) -> ByteBuffer {
            ByteBuffer(bytes: parts.flatMap { ChunkBatch.header($0.0, size: $0.1.count) + $0.1 })
        }
        add(
            "a batch of chunks where one does not match its hash (none is stored)", .post, ada.path("chunks"),
            batch([(goodChunk.hash, good), (expectedChunk.hash, "other bytes".bytes)]), .chunkHashMismatch,
            stillMissing: [goodChunk, expectedChunk])
        var truncated = batch([(goodChunk.hash, good), (expectedChunk.hash, expected)])
        truncated.moveWriterIndex(to: truncated.writerIndex - 3)
        add(
            "a batch of chunks ending inside a chunk", .post, ada.path("chunks"), truncated, .malformedRequest,
            stillMissing: [goodChunk, expectedChunk])
        var headerCut = batch([(goodChunk.hash, good)])
        headerCut.writeBytes(ChunkBatch.header(expectedChunk.hash, size: expected.count).prefix(20))
        add(
            "a batch of chunks ending inside a chunk's header", .post, ada.path("chunks"), headerCut,
            .malformedRequest, stillMissing: [goodChunk])
        add(
            "a batch of chunks announcing one over the chunk limit", .post, ada.path("chunks"),
            ByteBuffer(bytes: ChunkBatch.header(expectedChunk.hash, size: chunkLimit + 1) + expected), .bodyTooLarge,
            .contentTooLarge, stillMissing: [expectedChunk])
        let tooLarge = bytes(chunkLimit + 1, seed: 9)
        let tooLargeChunk = ChunkReference(hash: try Device.hash(tooLarge), size: Int64(tooLarge.count))
        add(
            "a chunk one byte over the limit", .put, ada.path("chunks/\(tooLargeChunk.hash)"),
            ByteBuffer(bytes: tooLarge), .bodyTooLarge, .contentTooLarge, stillMissing: [tooLargeChunk])
        add("a hash that is not hex", .put, ada.path("chunks/xyz"), ByteBuffer(bytes: expected), .invalidChunkHash)
        add(
            "a hash in upper case", .put, ada.path("chunks/\(expectedChunk.hash.string.uppercased())"),
            ByteBuffer(bytes: expected), .invalidChunkHash, stillMissing: [expectedChunk])
        add(
            "a hash of 63 characters", .get, ada.path("chunks/\(expectedChunk.hash.string.dropLast())"), nil,
            .invalidChunkHash)
        add("an unknown chunk", .get, ada.path("chunks/\(expectedChunk.hash)"), nil, .chunkNotFound, .notFound)
        add(
            "a chunk question naming a bad hash", .post, ada.path("chunks/missing"),
            text(#"{"chunks": [{"hash": "zz", "size": 1}]}"#), .invalidChunkHash)
        add(
            "a chunk question about more chunks than allowed", .post, ada.path("chunks/missing"),
            try json(
                MissingChunksRequest(
                    chunks: try (0...chunksPerRequest).map {
                        ChunkReference(hash: try Device.hash("chunk \($0)".bytes), size: 1)
                    })), .bodyTooLarge, .contentTooLarge)

        // Bodies over the JSON limit.
        let padding = String(repeating: " ", count: jsonLimit)
        add(
            "an item request over the JSON limit", .post, items, text(#"{"id": "x"}"# + padding), .bodyTooLarge,
            .contentTooLarge)
        add(
            "a key-value batch over the JSON limit", .post, ada.path("kv"), text(#"{"writes": []}"# + padding),
            .bodyTooLarge, .contentTooLarge)

        // Change tokens that are not this container's feed.
        let changes = ada.path("changes")
        let epoch = seed.feedToken.string.split(separator: ".")[1]
        for (name, token) in [
            ("garbage", "garbage"), ("empty", ""), ("of another container", seed.otherContainerToken.string),
            ("of the key-value store", seed.keyValueToken.string), ("past the feed's end", "f1.\(epoch).999"),
            ("with a negative position", "f1.\(epoch).-1"),
            ("with an overflowing position", "f1.\(epoch).99999999999999999999"),
        ] {
            add("a change token \(name)", .get, changes + "?since=\(token)", nil, .changeTokenExpired, .gone)
        }
        add("a key-value token that is garbage", .get, ada.path("kv?since=garbage"), nil, .changeTokenExpired, .gone)
        add(
            "a key-value token that is a feed token", .get, ada.path("kv?since=\(seed.feedToken)"), nil,
            .changeTokenExpired, .gone)
        for limit in ["0", "abc", "-1", "1.5", "99999999999999999999", ""] {
            add("limit=\(limit)", .get, changes + "?limit=\(limit)", nil, .malformedRequest)
        }

        // Key-value batches that break a limit, refused whole.
        let now = Date()
        func write(_ key: String, _ value: PropertyListValue?) -> KeyValueWrite {
            KeyValueWrite(key: key, value: value, timestamp: now)
        }
        let kv = ada.path("kv")
        let longKey = String(repeating: "k", count: 65)
        add(
            "a key of 65 bytes", .post, kv, try json(KeyValueBatch(writes: [write(longKey, .bool(true))])),
            .keyValueKeyTooLong)
        add(
            "a valid key and a key of 65 bytes", .post, kv,
            try json(KeyValueBatch(writes: [write("fine", .bool(true)), write(longKey, .bool(true))])),
            .keyValueKeyTooLong)
        add(
            "a removal of a key of 65 bytes", .post, kv, try json(KeyValueBatch(writes: [write(longKey, nil)])),
            .keyValueKeyTooLong)
        add("an empty key", .post, kv, try json(KeyValueBatch(writes: [write("", .bool(true))])), .keyValueKeyTooLong)
        add(
            "1025 keys", .post, kv,
            try json(KeyValueBatch(writes: (0..<1025).map { write("key \($0)", .integer(Int64($0))) })),
            .keyValueTooManyKeys, insufficientStorage)
        add(
            "a value over 1 MB", .post, kv,
            try json(KeyValueBatch(writes: [write("big", .string(String(repeating: "x", count: 1 << 20)))])),
            .keyValueStoreTooLarge, insufficientStorage)
        add(
            "values adding up to over 1 MB", .post, kv,
            try json(
                KeyValueBatch(
                    writes: (0..<5).map { write("part \($0)", .data(Data(count: 200_000))) })),
            .keyValueStoreTooLarge, insufficientStorage)
        add(
            "a value of an unknown property-list type", .post, kv,
            text(
                #"{"writes": [{"key": "a", "value": {"type": "set", "value": []}, "timestamp": "2026-01-01T00:00:00.000000Z"}]}"#
            ),
            .invalidPropertyListValue)
        add(
            "data that is not base64", .post, kv,
            text(
                #"{"writes": [{"key": "a", "value": {"type": "data", "value": "%%%"}, "timestamp": "2026-01-01T00:00:00.000000Z"}]}"#
            ),
            .invalidPropertyListValue)
        add(
            "a timestamp that is not a wire timestamp", .post, kv,
            text(#"{"writes": [{"key": "a", "value": {"type": "bool", "value": true}, "timestamp": "now"}]}"#),
            .invalidTimestamp)
        let deep =
            String(repeating: #"{"type": "array", "value": ["#, count: 10_000) + #"{"type": "bool", "value": true}"#
            + String(repeating: "]}", count: 10_000)
        add(
            "a value nested 10,000 deep", .post, kv,
            text(#"{"writes": [{"key": "deep", "timestamp": "2026-01-01T00:00:00.000000Z", "value": "# + deep + "}]}"),
            .malformedRequest)

        // Requests that do not fit the item's state.
        let current = seed.listVersion.id
        add(
            "resolving a version that is no conflict", .post, list + "/versions/\(current)/resolve", nil, .notAConflict,
            .conflict)
        add(
            "removing the current version", .delete, list + "/versions/\(current)", nil, .cannotRemoveCurrent, .conflict
        )
        add(
            "replacing the current version with an unknown one", .post, list + "/current",
            try json(ReplaceCurrentRequest(versionID: VersionID())), .unknownVersion, .notFound)
        add(
            "a delete based on an unknown version", .delete, list + "?basedOn=\(VersionID())", nil, .staleDelete,
            .conflict)
        add(
            "moving a deleted item", .patch, ada.path("items/\(seed.gone.id)"), validMove, .itemDeleted, .conflict)

        // Accounts and sign-in.
        func account(_ name: String, _ password: String) throws -> ByteBuffer {
            try json(RegisterRequest(name: name, password: password))
        }
        func login(_ name: String, _ password: String, device: String = "laptop", containers: [String]? = nil) throws
            -> ByteBuffer
        {
            var object: [String: Any] = ["name": name, "password": password, "deviceName": device]
            object["containers"] = containers
            return try body(object)
        }
        add("registering an empty name", .post, "/v1/accounts", try account("", "correct horse"), .invalidAccount)
        add(
            "registering a name with a space", .post, "/v1/accounts", try account("ada l", "correct horse"),
            .invalidAccount)
        add(
            "registering a name with a NUL", .post, "/v1/accounts", try account("ada\u{0}", "correct horse"),
            .invalidAccount)
        add(
            "registering a name of 65 characters", .post, "/v1/accounts",
            try account(String(repeating: "a", count: 65), "correct horse"), .invalidAccount)
        add("registering a password of 7 bytes", .post, "/v1/accounts", try account("eve", "1234567"), .invalidAccount)
        add(
            "registering a password of 73 bytes", .post, "/v1/accounts",
            try account("eve", String(repeating: "p", count: 73)), .invalidAccount)
        add(
            "registering an existing name in other case", .post, "/v1/accounts", try account("ADA", "correct horse"),
            .accountExists, .conflict)
        add("registering with malformed JSON", .post, "/v1/accounts", text(#"{"name": "eve""#), .malformedRequest)
        add(
            "signing in with a wrong password", .post, "/v1/login", try login("ada", "wrong horse"),
            .invalidCredentials, .unauthorized)
        add(
            "signing in to an unknown account", .post, "/v1/login", try login("nobody", "correct horse"),
            .invalidCredentials, .unauthorized)
        add(
            "signing in with an empty device name", .post, "/v1/login", try login("ada", "correct horse", device: " "),
            .malformedRequest)
        add(
            "signing in with a device name with a newline", .post, "/v1/login",
            try login("ada", "correct horse", device: "lap\ntop"), .malformedRequest)
        add(
            "signing in with a device name of 101 characters", .post, "/v1/login",
            try login("ada", "correct horse", device: String(repeating: "d", count: 101)), .malformedRequest)
        add(
            "signing in for a container id that is not one", .post, "/v1/login",
            try login("ada", "correct horse", containers: ["not a container"]), .invalidContainerID)

        // Routes that do not exist.
        add("an unknown route", .get, "/v1/nothing", nil, .routeNotFound, .notFound)
        add("an unknown route outside /v1", .get, "/nothing", nil, .routeNotFound, .notFound)
        add("an unknown route under a container", .get, ada.path("nothing"), nil, .routeNotFound, .notFound)
        add("an unknown route under an item", .post, list + "/nothing", nil, .routeNotFound, .notFound)
        add("a known route with another method", .put, "/v1/account", nil, .methodNotAllowed, .methodNotAllowed)
        return cases
    }

    // MARK: Bodies

    static func text(_ string: String) -> ByteBuffer { ByteBuffer(string: string) }

    static func json(_ value: some Encodable) throws -> ByteBuffer {
        ByteBuffer(bytes: try JSONEncoder().encode(value))
    }

    static func body(_ object: Any) throws -> ByteBuffer {
        ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object))
    }

    static func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any])
    }

    /// `count` bytes that differ with `seed`.
    static func bytes(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ $0 >> 8) }
    }
}
