import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityServer

/// Drafts of versions being uploaded: grown in order from chunks the account holds, read in pages, ended by the
/// commit, and told only to the push connections that asked for drafts.
@Suite("Service: drafts of versions being uploaded")
struct DraftRouteTests {
    @Test(
        "A draft grows in order and is read back; out-of-step, unknown chunks, foreign items and bad positions are refused; the commit ends it",
        arguments: ServiceStorage.available)
    func draftLifecycle(storage: ServiceStorage) async throws {
        try await TestServer.make(storage: storage).test { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            let stranger = try await Device.signIn(client, account: "grace", device: "phone")
            let item = ItemID()
            _ = try await laptop.send(
                .post, laptop.path("items"),
                json: CreateItemRequest(id: item, path: try ItemPath("Documents/Film.mov"), kind: .file)
            ).decode(ItemResponse.self)
            let content = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
            let prepared = try await laptop.prepareVersion(of: item, content)
            let version = prepared.id
            let chunks = prepared.manifest.chunks
            let route = laptop.path("items/\(item)/drafts/\(version)")

            let first = try await laptop.send(
                .post, route, json: DraftAppendRequest(from: 0, chunks: Array(chunks[..<3])))
            #expect(try first.decode(DraftPage.self).count == 3)
            let rest = try await laptop.send(
                .post, route, json: DraftAppendRequest(from: 3, chunks: Array(chunks[3...])))
            #expect(try rest.decode(DraftPage.self).count == chunks.count)
            #expect(try await laptop.send(.get, route).decode(DraftPage.self).chunks == chunks)
            let tail = try await laptop.send(.get, route + "?from=4").decode(DraftPage.self)
            #expect(tail.count == chunks.count && tail.chunks == Array(chunks[4...]))

            let refusals: [(Answer, ProtocolError.Code)] = [
                (
                    try await laptop.send(.post, route, json: DraftAppendRequest(from: 1, chunks: [chunks[0]])),
                    .draftOutOfStep
                ),
                (
                    try await laptop.send(
                        .post, route,
                        json: DraftAppendRequest(
                            from: chunks.count, chunks: [ChunkReference(hash: try Device.hash([1, 2, 3]), size: 3)])),
                    .chunksMissing
                ),
                (
                    try await laptop.send(.post, route, json: DraftAppendRequest(from: -1, chunks: [])),
                    .malformedRequest
                ),
                (
                    try await laptop.send(
                        .post, route,
                        json: DraftAppendRequest(
                            from: chunks.count, chunks: [ChunkReference(hash: chunks[0].hash, size: 0)])),
                    .malformedRequest
                ),
                (try await laptop.send(.get, route + "?from=-2"), .malformedRequest),
                (try await laptop.send(.get, laptop.path("items/\(item)/drafts/\(VersionID())")), .unknownVersion),
                (try await stranger.send(.get, stranger.path("items/\(item)/drafts/\(version)")), .unknownVersion),
                (
                    try await stranger.send(
                        .post, stranger.path("items/\(item)/drafts/\(version)"),
                        json: DraftAppendRequest(from: 0, chunks: [chunks[0]])),
                    .itemNotFound
                ),
                (
                    try await laptop.send(.post, route, body: ByteBuffer(string: "{\"from\": \"zero\"}")),
                    .malformedRequest
                ),
            ]
            for (answer, code) in refusals {
                #expect(answer.error?.code == code, "\(answer.status): \(answer.text)")
            }
            #expect(
                try await laptop.send(.get, route).decode(DraftPage.self).count == chunks.count,
                "refusals changed nothing")

            _ = try await laptop.send(.post, laptop.path("items/\(item)/versions"), json: prepared).decode(
                ItemResponse.self)
            #expect(try await laptop.send(.get, route).error?.code == .unknownVersion, "the commit ended the draft")
            let late = try await laptop.send(.post, route, json: DraftAppendRequest(from: 0, chunks: [chunks[0]]))
            #expect(late.error?.code == .versionExists)
        }
    }

    @Test(
        "A draft is pushed to connections subscribed with drafts, not to the others",
        arguments: ServiceStorage.available)
    func draftPushedToFollowersOnly(storage: ServiceStorage) async throws {
        try await TestServer.make(storage: storage).test(.live) { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            let desktop = try await Device.signIn(client, account: "ada", device: "desktop")
            let port = try #require(client.port)
            let item = ItemID()
            _ = try await laptop.send(
                .post, laptop.path("items"),
                json: CreateItemRequest(id: item, path: try ItemPath("Documents/Film.mov"), kind: .file)
            ).decode(ItemResponse.self)
            let prepared = try await laptop.prepareVersion(of: item, (0..<20_000).map { UInt8(truncatingIfNeeded: $0) })
            let chunks = prepared.manifest.chunks
            // Each listener reports the first message after its subscription other than a heartbeat; the laptop then
            // grows a draft and commits, so a listener that hears no draft hears the commit first.
            let subscribed = Mutex(0)
            let trigger: @Sendable () async throws -> Void = {
                guard
                    subscribed.withLock({
                        $0 += 1; return $0
                    }) == 2
                else { return }
                _ = try await laptop.send(
                    .post, laptop.path("items/\(item)/drafts/\(prepared.id)"),
                    json: DraftAppendRequest(from: 0, chunks: chunks))
                _ = try await laptop.send(.post, laptop.path("items/\(item)/versions"), json: prepared)
            }
            let (heard, other) = try await withDeadline(seconds: 600) {
                async let following = Self.firstNews(port: port, token: desktop.token, drafts: true, trigger: trigger)
                async let plain = Self.firstNews(port: port, token: desktop.token, drafts: false, trigger: trigger)
                return try await (following, plain)
            }
            #expect(
                heard == .draft(container: desktop.container, item: item, version: prepared.id, count: chunks.count))
            guard case .changed = other else {
                Issue.record("a connection without drafts heard \(other)")
                return
            }
        }
    }

    /// Subscribes to the default container (with drafts or not), runs `trigger` once subscribed, and returns the
    /// first message after that which is not a heartbeat.
    static func firstNews(
        port: Int, token: String, drafts: Bool, trigger: @escaping @Sendable () async throws -> Void
    ) async throws -> PushMessage {
        let result = Mutex<PushMessage?>(nil)
        try await WebSocketClient.connect(
            url: "ws://127.0.0.1:\(port)/v1/push",
            configuration: .init(additionalHeaders: [.authorization: "Bearer \(token)"]), logger: LiveServiceTests.quiet
        ) { inbound, outbound, _ in
            try await outbound.write(
                .text(try LiveServiceTests.encode(.subscribe(containers: [Device.defaultContainer], drafts: drafts))))
            for try await message in inbound.messages(maxSize: 1 << 20) {
                guard case .text(let text) = message else { continue }
                let decoded = try JSONDecoder().decode(PushMessage.self, from: Data(text.utf8))
                switch decoded {
                case .heartbeat: continue
                case .subscribed:
                    try await trigger()
                    continue
                default:
                    result.withLock { $0 = decoded }
                }
                break
            }
        }
        return try #require(result.withLock { $0 })
    }
}
