import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import HummingbirdWSClient
import Logging
import NIOCore
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityServer

/// Every authenticated route, tried without a token, with malformed and revoked ones, with another account's
/// token, and with a token restricted to other containers.
@Suite("Service: authorization on every route")
struct AuthorizationTests {
    /// The routes anyone may call.
    static let openRoutes: Set<String> = [
        "GET /health", "GET /metrics", "GET /openapi.json", "POST /v1/accounts", "POST /v1/login",
    ]
    /// The WebSocket route: tried over a live server, with and without an upgrade.
    static let pushRoute = "GET /v1/push"

    @Test(
        "Every authenticated route refuses a missing, malformed or revoked token with one identical 401 answer",
        arguments: ServiceStorage.available)
    func refusesMissingMalformedAndRevokedTokens(storage: ServiceStorage) async throws {
        let server = try await TestServer.make(storage: storage)
        let routes = Self.authenticatedRoutes(of: server.service)
        try await server.test { client in
            let seed = try await Self.seedAda(client)
            let revoked = try await Self.revokedToken(client, of: seed.device)
            let before = try await Self.snapshot(seed.device)

            var attempts: [(mode: String, authorization: String?)] = [("no Authorization header", nil)]
            attempts += Self.malformedHeaders(validToken: seed.device.token).map { ("malformed header \($0.0)", $0.1) }
            attempts.append(("revoked token", "Bearer \(revoked)"))

            // Compared with sorted keys: the service's encoder does not fix the order of the keys.
            var bodies: [Data: [String]] = [:]
            for route in routes {
                let probe = try Self.probe(route, seed)
                for attempt in attempts {
                    let answer = try await Self.send(client, probe, authorization: attempt.authorization)
                    let label = "\(route) with \(attempt.mode)"
                    #expect(answer.status == .unauthorized, "\(label): got \(answer.status) \(answer.text)")
                    #expect(answer.error?.code == .unauthorized, "\(label): body \(answer.text)")
                    bodies[Self.canonical(answer.body), default: []].append(label)
                }
            }
            #expect(
                bodies.count == 1,
                "every refusal must carry the same body, so nothing is learnt about the token: \(bodies.mapValues(\.count))"
            )

            let after = try await Self.snapshot(seed.device)
            #expect(after == before, "the refused requests changed the account's data")
            let spare = try await seed.device.send(.get, "/v1/account", token: seed.spareToken)
            #expect(spare.status == .ok, "DELETE /v1/tokens/{token} without a valid token revoked nothing")
        }
    }

    @Test(
        "Another account's valid token never reaches the account's items, versions, chunks, feed or tokens",
        arguments: ServiceStorage.available)
    func anotherAccountSeesNothing(storage: ServiceStorage) async throws {
        let server = try await TestServer.make(storage: storage)
        let routes = Self.authenticatedRoutes(of: server.service)
        try await server.test { client in
            let seed = try await Self.seedAda(client)
            let bob = try await Device.signIn(client, account: "bob", device: "Bob's phone")
            let before = try await Self.snapshot(seed.device)
            let adaTokens = Set(before.tokens.map(\.id))
            let secrets = [
                seed.device.info.accountID.string, seed.device.info.device.id.string, seed.device.info.device.name,
                seed.path.string, Self.secretValue, String(decoding: seed.chunkBytes, as: UTF8.self),
            ]

            // Reads first, so Bob's own writes (a chunk, a key) cannot hide what he would otherwise see.
            let reads: Set<String> = [
                "POST /v1/containers/{container}/items/details", "POST /v1/containers/{container}/chunks/fetch",
            ]
            func isRead(_ route: RouteSignature) -> Bool { route.method == "GET" || reads.contains(route.description) }
            let ordered = routes.filter(isRead) + routes.filter { !isRead($0) }
            for route in ordered {
                let answer = try await Self.send(
                    client, try Self.probe(route, seed), authorization: "Bearer \(bob.token)")
                let label = "\(route) with another account's token"
                #expect(answer.status != .internalServerError, "\(label): \(answer.text)")
                for secret in secrets {
                    #expect(!answer.text.contains(secret), "\(label) leaks \"\(secret)\": \(answer.text)")
                }
                switch route.description {
                case "GET /v1/account":
                    let account = try answer.decode(AccountInfo.self)
                    #expect(account.id == bob.info.accountID, "\(label): \(answer.text)")
                    #expect(account.usedBytes == 0, "\(label): \(answer.text)")
                case "GET /v1/tokens":
                    let tokens = try answer.decode([TokenInfo].self)
                    #expect(tokens.allSatisfy { $0.accountID == bob.info.accountID }, "\(label): \(answer.text)")
                    #expect(adaTokens.isDisjoint(with: tokens.map(\.id)), "\(label): \(answer.text)")
                case "DELETE /v1/tokens/{token}":
                    Self.expectRefusal(answer, .tokenNotFound, .notFound, label)
                case "GET /v1/containers/{container}/items":
                    let list = try answer.decode(ItemListResponse.self)
                    #expect(list.items.isEmpty, "\(label): \(answer.text)")
                case "POST /v1/containers/{container}/items":
                    // The version names the account's chunks, which another account does not have.
                    Self.expectRefusal(answer, .chunksMissing, .conflict, label)
                    #expect(answer.error?.missingChunks == [seed.chunk.hash], "\(label): \(answer.text)")
                case "POST /v1/containers/{container}/batch":
                    // Each operation refused in Bob's own container: the create lacks Ada's chunks, the commit's
                    // item is unknown to Bob.
                    let batch = try answer.decode(ItemBatchResponse.self)
                    #expect(
                        batch.results.map(\.error?.code) == [.chunksMissing, .itemNotFound], "\(label): \(answer.text)")
                    #expect(batch.token == nil, "\(label): \(answer.text)")
                case "POST /v1/containers/{container}/items/details":
                    // Ada's item, asked for by id with one of its versions as held: Bob's container has none.
                    let details = try answer.decode(ItemDetailsResponse.self)
                    #expect(details.items.isEmpty, "\(label): \(answer.text)")
                case "GET /v1/containers/{container}/items/{item}",
                    "PATCH /v1/containers/{container}/items/{item}",
                    "DELETE /v1/containers/{container}/items/{item}",
                    "GET /v1/containers/{container}/items/{item}/versions",
                    "POST /v1/containers/{container}/items/{item}/versions",
                    "GET /v1/containers/{container}/items/{item}/versions/{version}",
                    "DELETE /v1/containers/{container}/items/{item}/versions/{version}",
                    "POST /v1/containers/{container}/items/{item}/versions/{version}/resolve",
                    "POST /v1/containers/{container}/items/{item}/current",
                    "POST /v1/containers/{container}/items/{item}/drafts/{version}":
                    Self.expectRefusal(answer, .itemNotFound, .notFound, label)
                case "GET /v1/containers/{container}/items/{item}/drafts/{version}":
                    // Drafts are kept per account's container: Bob's has none of Ada's item.
                    Self.expectRefusal(answer, .unknownVersion, .notFound, label)
                case "POST /v1/containers/{container}/chunks/missing":
                    let missing = try answer.decode(MissingChunksResponse.self)
                    #expect(missing.missing == [seed.chunk.hash], "\(label): chunks are never shared between accounts")
                case "PUT /v1/containers/{container}/chunks/{hash}":
                    #expect(answer.status == .created, "\(label): 200 would tell that someone has this chunk")
                case "POST /v1/containers/{container}/chunks":
                    // Stored in Bob's own account: Ada's having the chunk changes nothing for Bob.
                    #expect(try answer.decode(ChunkBatchResponse.self).received == 1, "\(label): \(answer.text)")
                case "GET /v1/containers/{container}/chunks/{hash}":
                    Self.expectRefusal(answer, .chunkNotFound, .notFound, label)
                case "POST /v1/containers/{container}/chunks/fetch":
                    // Ada's chunk asked for in Bob's account: left out, the answer empty.
                    #expect(answer.status == .ok && answer.body.isEmpty, "\(label): \(answer.text)")
                case "GET /v1/containers/{container}/changes":
                    let page = try answer.decode(ChangePage.self)
                    #expect(page.changes.isEmpty, "\(label): \(answer.text)")
                case "GET /v1/containers/{container}/kv":
                    let store = try answer.decode(KeyValueChanges.self)
                    #expect(store.entries.isEmpty, "\(label): \(answer.text)")
                case "POST /v1/containers/{container}/kv":
                    // A write to Bob's own store of the same container id.
                    _ = try answer.decode(KeyValueBatchResponse.self)
                default:
                    Issue.record("no expectation for \(route) with another account's token; add one")
                }
            }

            // Bob's own item with Ada's item id: Ada's versions are still unknown to it.
            let bobItem = try await bob.send(
                .post, bob.path("items"),
                json: CreateItemRequest(id: seed.item, path: try ItemPath("Documents/Bob.txt"), kind: .file)
            )
            #expect(bobItem.status == .created, "an item id is per account: \(bobItem.text)")
            let versionRoutes: [(HTTPRequest.Method, String, ByteBuffer?)] = [
                (.get, "items/\(seed.item)/versions/\(seed.old.id)", nil),
                (.delete, "items/\(seed.item)/versions/\(seed.old.id)", nil),
                (.post, "items/\(seed.item)/versions/\(seed.old.id)/resolve", nil),
                (.post, "items/\(seed.item)/current", try Self.json(ReplaceCurrentRequest(versionID: seed.old.id))),
            ]
            for (method, rest, body) in versionRoutes {
                let answer = try await bob.send(method, bob.path(rest), body: body)
                Self.expectRefusal(answer, .unknownVersion, .notFound, "\(method) \(rest) of Bob's own item")
            }
            let detail = try await bob.send(.get, bob.path("items/\(seed.item)")).decode(ItemDetail.self)
            #expect(detail.versions.isEmpty, "Bob's item shows none of Ada's versions")
            #expect(detail.item.path.string == "Documents/Bob.txt")
            let foreignToken = try await bob.send(.get, bob.path("changes?since=\(before.items.token)"))
            Self.expectRefusal(foreignToken, .changeTokenExpired, .gone, "Bob reading from Ada's feed token")

            let after = try await Self.snapshot(seed.device)
            #expect(after == before, "another account's requests changed the account's data")
            let spare = try await seed.device.send(.get, "/v1/account", token: seed.spareToken)
            #expect(spare.status == .ok, "another account revoked one of the account's tokens")
            let chunk = try await seed.device.send(.get, seed.device.path("chunks/\(seed.chunk.hash)"))
            #expect(chunk.status == .ok)
            #expect(Array(chunk.body) == seed.chunkBytes, "the account's chunk is its own")
        }
    }

    @Test(
        "A token restricted to some containers is refused every route of another container with 403",
        arguments: ServiceStorage.available)
    func restrictedTokenIsRefusedOtherContainers(storage: ServiceStorage) async throws {
        let server = try await TestServer.make(storage: storage)
        let routes = Self.authenticatedRoutes(of: server.service).filter { $0.path.contains("{container}") }
        #expect(routes.count > 15)
        try await server.test { client in
            let other = try ContainerID("TEAM.com.example.other")
            _ = try await Self.seedAda(client)
            let ada = try await Device.signIn(client, account: "ada", device: "Ada's desktop", container: other)
            let seed = try await Self.seed(ada, spareToken: "")
            let limited = try await Device.signIn(
                client, account: "ada", device: "Ada's watch", containers: [Device.defaultContainer])
            let none = try await Device.signIn(client, account: "ada", device: "Ada's kiosk", containers: [])
            let before = try await Self.snapshot(seed.device)

            for route in routes {
                let answer = try await Self.send(
                    client, try Self.probe(route, seed), authorization: "Bearer \(limited.token)")
                Self.expectRefusal(
                    answer, .containerNotPermitted, .forbidden,
                    "\(route) on \(other) with a token for \(limited.container)")
            }

            for route in routes {
                let answer = try await Self.send(
                    client, try Self.probe(route, seed), authorization: "Bearer \(none.token)")
                Self.expectRefusal(answer, .containerNotPermitted, .forbidden, "\(route) with a token for no container")
            }

            #expect(try await Self.snapshot(seed.device) == before, "the refused requests changed container \(other)")
            let permitted = try await limited.send(.get, limited.path("items")).decode(ItemListResponse.self)
            #expect(permitted.items.count == 1, "the token still works on its own container")
        }
    }

    @Test(
        "The push socket refuses a missing, malformed or revoked token and never tells another account's news",
        arguments: ServiceStorage.available)
    func pushSocketIsAuthenticated(storage: ServiceStorage) async throws {
        let server = try await TestServer.make(storage: storage)
        let routes = Self.authenticatedRoutes(of: server.service, includingPush: true)
        #expect(routes.contains { $0.description == Self.pushRoute }, "the push route is registered")
        try await server.test(.live) { client in
            let port = try #require(client.port)
            let seed = try await Self.seedAda(client)
            let revoked = try await Self.revokedToken(client, of: seed.device)
            var attempts: [(mode: String, authorization: String?)] = [("no Authorization header", nil)]
            attempts += Self.malformedHeaders(validToken: seed.device.token).map { ("malformed header \($0.0)", $0.1) }
            attempts.append(("revoked token", "Bearer \(revoked)"))

            var bodies: Set<Data> = []
            var upgrades: Set<String> = []
            for attempt in attempts {
                var headers: HTTPFields = [:]
                if let authorization = attempt.authorization { headers[.authorization] = authorization }
                let connected = Mutex(false)
                let upgradeHeaders = headers
                await #expect(throws: (any Error).self, "\(Self.pushRoute) with \(attempt.mode) is upgraded") {
                    try await Self.within(seconds: 30) {
                        try await WebSocketClient.connect(
                            url: "ws://127.0.0.1:\(port)/v1/push",
                            configuration: .init(additionalHeaders: upgradeHeaders), logger: Self.quiet
                        ) { _, _, _ in connected.withLock { $0 = true } }
                    }
                }
                #expect(!connected.withLock { $0 }, "\(Self.pushRoute) with \(attempt.mode) reached the handler")

                // The refused upgrade, and the route asked for without an upgrade, seen as plain HTTP.
                let upgrade = try await Self.upgradeRequest(port: port, headers: upgradeHeaders)
                #expect(
                    upgrade.status.kind == .clientError,
                    "\(Self.pushRoute) upgrade with \(attempt.mode): \(upgrade.status) \(upgrade.text)")
                upgrades.insert(
                    "\(upgrade.status.code) \(String(decoding: Self.canonical(upgrade.body), as: UTF8.self))")
                let plain = try await Self.plainRequest(port: port, headers: upgradeHeaders)
                Self.expectRefusal(
                    plain, .unauthorized, .unauthorized, "\(Self.pushRoute) without upgrade with \(attempt.mode)")
                bodies.insert(Self.canonical(plain.body))
            }
            #expect(upgrades.count == 1, "every refused upgrade gets the same answer: \(upgrades)")
            #expect(bodies.count == 1, "every refusal carries the same body")

            // Bob subscribes to the same container id and hears nothing of Ada's commit.
            let bob = try await Device.signIn(client, account: "bob", device: "Bob's phone")
            let heard = try await Self.within(seconds: 30) {
                try await Self.listen(port: port, token: bob.token, container: bob.container) {
                    _ = try await seed.device.commit(seed.item, "the secret plan, v3".bytes, basedOn: seed.current.id)
                    _ = try await seed.device.send(
                        .post, seed.device.path("kv"),
                        json: KeyValueBatch(writes: [
                            KeyValueWrite(key: "another", value: .string(Self.secretValue), timestamp: Date())
                        ])
                    ).decode(KeyValueBatchResponse.self)
                }
            }
            #expect(heard.news.isEmpty, "another account's subscriber was told of the account's changes: \(heard.news)")
            #expect(heard.heartbeats >= 3)

            // A token restricted to one container cannot subscribe to another.
            let other = try ContainerID("TEAM.com.example.other")
            let limited = try await Device.signIn(
                client, account: "ada", device: "Ada's watch", containers: [Device.defaultContainer])
            let answer = try await Self.within(seconds: 30) {
                try await Self.firstAnswer(port: port, token: limited.token, subscribing: [other])
            }
            guard case .error(let error) = answer else {
                Issue.record("subscribing to \(other) with a token for \(limited.container): \(answer)")
                return
            }
            #expect(error.code == .containerNotPermitted)
        }
    }

    // MARK: The account's data

    static let secretValue = "Ada's secret value"

    /// The ids of one account's data in one container, to fill a route's placeholders with.
    struct Seed: Sendable {
        var device: Device
        var container: ContainerID { device.container }
        var item: ItemID
        var path: ItemPath
        /// The item's first version, no longer current.
        var old: VersionRecord
        /// The item's current version.
        var current: VersionRecord
        var chunkBytes: [UInt8]
        var chunk: ChunkReference
        /// A second token of the account (the target of `DELETE /v1/tokens/{token}`).
        var spareToken: String
        var spareTokenID: UUID
    }

    /// Ada, with an item of two versions, a key-value entry and a second device.
    static func seedAda(_ client: any ServiceTestClient) async throws -> Seed {
        let ada = try await Device.signIn(client, account: "ada", device: "Ada's laptop")
        let spare = try await Device.signIn(client, account: "ada", device: "Ada's tablet")
        var seed = try await seed(ada, spareToken: spare.token)
        seed.spareTokenID = spare.info.id
        return seed
    }

    static func seed(_ device: Device, spareToken: String) async throws -> Seed {
        let path = "Documents/Secret plan \(device.container).txt"
        let content = "the secret plan of \(device.container)".bytes
        let created = try await device.create(path, content)
        let old = try #require(created.version)
        let committed = try await device.commit(created.item.id, "the secret plan, v2".bytes, basedOn: old.id)
        let current = try #require(committed.version)
        _ = try await device.send(
            .post, device.path("kv"),
            json: KeyValueBatch(writes: [KeyValueWrite(key: "secret", value: .string(secretValue), timestamp: Date())])
        ).decode(KeyValueBatchResponse.self)
        return Seed(
            device: device, item: created.item.id, path: try ItemPath(path), old: old, current: current,
            chunkBytes: content, chunk: old.manifest.chunks[0], spareToken: spareToken, spareTokenID: UUID())
    }

    /// A token of `device`'s account, signed in and then revoked through `DELETE /v1/tokens/{id}`.
    static func revokedToken(_ client: any ServiceTestClient, of device: Device) async throws -> String {
        let old = try await Device.signIn(client, account: "ada", device: "Ada's old phone")
        let revoke = try await device.send(.delete, "/v1/tokens/\(old.info.id)")
        #expect(revoke.status == .noContent, "revoking: \(revoke.text)")
        let tokens = try await device.send(.get, "/v1/tokens").decode([TokenInfo].self)
        #expect(tokens.first { $0.id == old.info.id }?.revokedAt != nil, "the token is listed as revoked")
        return old.token
    }

    /// Everything the account can read of its data; equal before and after means nothing changed.
    struct Snapshot: Equatable {
        var account: AccountInfo
        var tokens: [TokenInfo]
        var changes: [Change]
        var items: ItemListResponse
        var details: [ItemDetail]
        var keyValues: KeyValueChanges
    }

    static func snapshot(_ device: Device) async throws -> Snapshot {
        let items = try await device.send(.get, device.path("items")).decode(ItemListResponse.self)
        var details: [ItemDetail] = []
        for item in items.items {
            details.append(try await device.send(.get, device.path("items/\(item.id)")).decode(ItemDetail.self))
        }
        return Snapshot(
            account: try await device.send(.get, "/v1/account").decode(AccountInfo.self),
            tokens: try await device.send(.get, "/v1/tokens").decode([TokenInfo].self),
            changes: try await device.allChanges(), items: items, details: details,
            keyValues: try await device.send(.get, device.path("kv")).decode(KeyValueChanges.self))
    }

    // MARK: Routes and requests

    /// The service's authenticated routes (HTTP only unless `includingPush`).
    static func authenticatedRoutes(of service: UbiquityService, includingPush: Bool = false) -> [RouteSignature] {
        let routes = service.routes.filter {
            !openRoutes.contains($0.description) && (includingPush || $0.description != pushRoute)
        }
        #expect(routes.count >= 20, "the route list is the service's: \(routes)")
        return routes
    }

    /// Authorization values that are not a valid bearer token.
    static func malformedHeaders(validToken: String) -> [(String, String)] {
        [
            ("\"Bearer\"", "Bearer"),
            ("\"Bearer \" (empty token)", "Bearer "),
            ("with Basic credentials", "Basic YWRhOmNvcnJlY3QgaG9yc2U="),
            ("with a valid token under another scheme", "Token \(validToken)"),
            ("with a valid token and no scheme", validToken),
            ("with a valid token and a character more", "Bearer \(validToken)x"),
            ("with an unknown token", "Bearer \(String(repeating: "A", count: 43))"),
            ("of 600 bytes", "Bearer " + String(repeating: "x", count: 593)),
        ]
    }

    /// A request of `route` with the seed's ids and a body that would succeed if the caller were the owner.
    struct Probe: Sendable {
        var method: HTTPRequest.Method
        var uri: String
        var body: ByteBuffer?
    }

    static func probe(_ route: RouteSignature, _ seed: Seed) throws -> Probe {
        var uri = route.path
        for (placeholder, value) in [
            ("{container}", seed.container.string), ("{item}", seed.item.string), ("{version}", seed.old.id.string),
            ("{hash}", seed.chunk.hash.string), ("{token}", seed.spareTokenID.uuidString.lowercased()),
        ] {
            uri = uri.replacingOccurrences(of: placeholder, with: value)
        }
        #expect(!uri.contains("{"), "\(route): a placeholder is left unfilled in \(uri)")
        let stranger = SavingDevice(id: DeviceID(), name: "probe")
        var body: ByteBuffer?
        switch route.description {
        case "POST /v1/containers/{container}/items":
            var version = seed.old
            version.id = VersionID()
            version.savingDevice = stranger
            body = try json(
                CreateItemRequest(
                    id: seed.item, path: try ItemPath("Documents/Intruder.txt"), kind: .file, version: version))
        case "POST /v1/containers/{container}/batch":
            var created = seed.old
            created.id = VersionID()
            created.savingDevice = stranger
            var committed = seed.old
            committed.id = VersionID()
            committed.basedOn = seed.current.id
            committed.savingDevice = stranger
            body = try json(
                ItemBatchRequest(operations: [
                    .create(
                        CreateItemRequest(
                            id: seed.item, path: try ItemPath("Documents/Intruder.txt"), kind: .file, version: created)),
                    .commit(committed),
                ]))
        case "POST /v1/containers/{container}/items/details":
            body = try json(ItemDetailsRequest(items: [.init(id: seed.item, have: seed.old.id)]))
        case "PATCH /v1/containers/{container}/items/{item}":
            body = try json(MoveItemRequest(path: try ItemPath("Documents/Moved.txt")))
        case "DELETE /v1/containers/{container}/items/{item}":
            uri += "?basedOn=\(seed.current.id)"
        case "POST /v1/containers/{container}/items/{item}/versions":
            var version = seed.old
            version.id = VersionID()
            version.basedOn = seed.current.id
            version.savingDevice = stranger
            body = try json(version)
        case "POST /v1/containers/{container}/items/{item}/current":
            body = try json(ReplaceCurrentRequest(versionID: seed.old.id))
        case "POST /v1/containers/{container}/items/{item}/drafts/{version}":
            body = try json(DraftAppendRequest(from: 0, chunks: [seed.chunk]))
        case "POST /v1/containers/{container}/chunks/missing":
            body = try json(MissingChunksRequest(chunks: [seed.chunk]))
        case "POST /v1/containers/{container}/chunks/fetch":
            body = try json(ChunkFetchRequest(hashes: [seed.chunk.hash]))
        case "PUT /v1/containers/{container}/chunks/{hash}":
            body = ByteBuffer(bytes: seed.chunkBytes)
        case "POST /v1/containers/{container}/chunks":
            body = ByteBuffer(bytes: ChunkBatch.header(seed.chunk.hash, size: seed.chunkBytes.count) + seed.chunkBytes)
        case "POST /v1/containers/{container}/kv":
            body = try json(
                KeyValueBatch(writes: [
                    KeyValueWrite(key: "secret", value: .string("overwritten"), timestamp: Date() + 86_400)
                ]))
        case "GET /v1/account", "GET /v1/tokens", "DELETE /v1/tokens/{token}",
            "GET /v1/containers/{container}/items", "GET /v1/containers/{container}/items/{item}",
            "GET /v1/containers/{container}/items/{item}/versions",
            "GET /v1/containers/{container}/items/{item}/versions/{version}",
            "DELETE /v1/containers/{container}/items/{item}/versions/{version}",
            "POST /v1/containers/{container}/items/{item}/versions/{version}/resolve",
            "GET /v1/containers/{container}/items/{item}/drafts/{version}",
            "GET /v1/containers/{container}/chunks/{hash}", "GET /v1/containers/{container}/changes",
            "GET /v1/containers/{container}/kv":
            body = nil
        default:
            Issue.record("no probe for \(route); add one to AuthorizationTests.probe")
        }
        return Probe(method: HTTPRequest.Method(route.method) ?? .get, uri: uri, body: body)
    }

    static func json(_ value: some Encodable) throws -> ByteBuffer {
        ByteBuffer(bytes: try JSONEncoder().encode(value))
    }

    static func send(_ client: any ServiceTestClient, _ probe: Probe, authorization: String?) async throws -> Answer {
        var headers: HTTPFields = [:]
        if let authorization { headers[.authorization] = authorization }
        if probe.body != nil, probe.method != .put { headers[.contentType] = "application/json" }
        let response = try await client.executeRequest(
            uri: probe.uri, method: probe.method, headers: headers, body: probe.body)
        return Answer(status: response.status, body: Data(response.body.readableBytesView))
    }

    /// `body` as JSON with sorted keys (or as it is when it is not JSON).
    static func canonical(_ body: Data) -> Data {
        guard let object = try? JSONSerialization.jsonObject(with: body),
            let sorted = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        else { return body }
        return sorted
    }

    /// A WebSocket upgrade request to `/v1/push` with `headers`, sent on a connection of its own.
    static func upgradeRequest(port: Int, headers: HTTPFields) async throws -> Answer {
        var upgrade = headers
        upgrade[.connection] = "Upgrade"
        upgrade[.upgrade] = "websocket"
        upgrade[.secWebSocketVersion] = "13"
        upgrade[.secWebSocketKey] = "dGhlIHNhbXBsZSBub25jZQ=="
        return try await plainRequest(port: port, headers: upgrade)
    }

    /// A `GET /v1/push` with `headers`, sent on a connection of its own (closed after it, so that the next
    /// upgrade request is not sent on a used connection, which the framework answers with a redirect).
    static func plainRequest(port: Int, headers: HTTPFields) async throws -> Answer {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/push")
        for field in headers { request.headers.add(name: field.name.rawName, value: field.value) }
        if headers[.connection] == nil { request.headers.add(name: "Connection", value: "close") }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(600))
        let body = try await response.body.collect(upTo: 1 << 20)
        return Answer(status: HTTPResponse.Status(code: Int(response.status.code)), body: Data(body.readableBytesView))
    }

    static func expectRefusal(
        _ answer: Answer, _ code: ProtocolError.Code, _ status: HTTPResponse.Status, _ label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            answer.status == status, "\(label): expected \(status), got \(answer.status) \(answer.text)",
            sourceLocation: sourceLocation)
        #expect(
            answer.error?.code == code, "\(label): expected \(code), got \(answer.text)",
            sourceLocation: sourceLocation)
    }

    // MARK: Push

    static let quiet: Logger = {
        var logger = Logger(label: "ubiquity.test.authorization")
        logger.logLevel = .critical
        return logger
    }()

    struct Heard: Sendable {
        var news: [PushMessage] = []
        var heartbeats = 0
    }

    /// Subscribes to `container`, runs `trigger` once subscribed, then listens for three heartbeats and returns
    /// every change message heard meanwhile.
    static func listen(
        port: Int, token: String, container: ContainerID, trigger: @escaping @Sendable () async throws -> Void
    ) async throws -> Heard {
        let result = Mutex(Heard())
        try await WebSocketClient.connect(
            url: "ws://127.0.0.1:\(port)/v1/push",
            configuration: .init(additionalHeaders: [.authorization: "Bearer \(token)"]), logger: quiet
        ) { inbound, outbound, _ in
            try await outbound.write(.text(try encode(.subscribe(containers: [container]))))
            var triggered = false
            for try await message in inbound.messages(maxSize: 1 << 20) {
                guard case .text(let text) = message else { continue }
                let decoded = try JSONDecoder().decode(PushMessage.self, from: Data(text.utf8))
                switch decoded {
                case .subscribed:
                    try await trigger()
                    triggered = true
                case .heartbeat where triggered:
                    result.withLock { $0.heartbeats += 1 }
                case .heartbeat:
                    break
                default:
                    result.withLock { $0.news.append(decoded) }
                }
                if result.withLock({ $0.heartbeats }) >= 3 { break }
            }
        }
        return result.withLock { $0 }
    }

    /// Subscribes to `containers` and returns the first answer that is not a heartbeat.
    static func firstAnswer(port: Int, token: String, subscribing containers: [ContainerID]) async throws
        -> PushMessage
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

    /// Runs `body`, failing instead of hanging if it takes longer than `seconds` (a guard, not a timing assertion).
    static func within<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws
        -> T
    {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw TimedOut(seconds: seconds)
            }
            return value
        }
    }

    struct TimedOut: Error, CustomStringConvertible {
        var seconds: Double
        var description: String { "gave up after \(seconds) s" }
    }

    static func encode(_ message: PushMessage) throws -> String {
        String(decoding: try JSONEncoder().encode(message), as: UTF8.self)
    }
}
