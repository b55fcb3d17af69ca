import Foundation
import Hummingbird
import NIOCore
import Synchronization
import UbiquityProtocol

/// What every route handler works with: storage, the push hub, the configuration and the figures.
struct RouteEnvironment: Sendable {
    let store: any MetadataStore
    let chunks: any ChunkStore
    let hub: PushHub
    let configuration: ServerConfiguration
    let metrics: ServerMetrics
    /// How this node tells the others sharing its database of changes (`nil`: it is the only one).
    let cluster: (any ClusterBus)?
    /// Tokens recently checked by the authentication middleware.
    let tokens: TokenCache
    /// The quota chunk uploads under way hold.
    let quota = QuotaReservations()
    /// The drafts of versions being uploaded: in the database the nodes share when there is one, else in memory.
    let drafts: any DraftStore
    /// A hash checked when a login names no account, so that answering takes as long as for a real one.
    let decoyHash = DecoyHash()

    init(
        store: any MetadataStore, chunks: any ChunkStore, hub: PushHub, configuration: ServerConfiguration,
        metrics: ServerMetrics, cluster: (any ClusterBus)?, drafts: any DraftStore = DraftBoard()
    ) {
        self.store = store
        self.chunks = chunks
        self.hub = hub
        self.configuration = configuration
        self.metrics = metrics
        self.cluster = cluster
        tokens = TokenCache(lifetime: configuration.tokenCacheLifetime)
        self.drafts = drafts
    }

    /// Decodes a JSON body of at most the configured size.
    /// - Throws: ``ProtocolError/Code/bodyTooLarge``, ``ProtocolError/Code/malformedRequest`` or the code of a
    ///   wire type's own check.
    func decode<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T {
        let limit = configuration.limits.jsonBodyBytes
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw ProtocolError(.bodyTooLarge, "the body is \(length) bytes; this route accepts at most \(limit)")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw ProtocolError(.bodyTooLarge, "the body is larger than \(limit) bytes")
        }
        do {
            return try WireJSONDecoder().decode(type, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw ProtocolError(.malformedRequest, "the body is not a valid \(type): \(error.summary)")
        }
    }

    /// A JSON response.
    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try WireJSONEncoder(sortsKeys: true).encode(value))))
    }

    /// Counts a change to a container and tells its subscribers where its feed now is.
    func announce(_ response: ItemResponse, in container: ContainerKey, count: Int = 1) {
        metrics.commits.increment(by: Int64(count))
        if response.version != nil || response.item.isDeleted { drafts.committed(response.item.id, in: container) }
        hub.publish(.changed(container: container.container, token: response.token), to: container)
        cluster?.announce(.changed(account: container.account, container: container.container, token: response.token))
    }

    /// Acts on what another node said: tells this node's subscribers of changes made through it, forgets a token it
    /// revoked; after events may have been missed, forgets every cached token and tells every subscriber where its
    /// containers' feeds are now.
    func hear(_ signal: ClusterSignal) async {
        switch signal {
        case .event(.changed(let account, let container, let token)):
            hub.publish(
                .changed(container: container, token: token), to: ContainerKey(account: account, container: container))
        case .event(.keyValueChanged(let account, let container, let token)):
            hub.publish(
                .keyValueChanged(container: container, token: token),
                to: ContainerKey(account: account, container: container))
        case .event(.tokenRevoked(let id)):
            tokens.remove(id: id)
        case .event(.draftGrew(let account, let container, let item, let version, let count)):
            hub.publishDraft(
                .draft(container: container, item: item, version: version, count: count),
                to: ContainerKey(account: account, container: container))
        case .listening:
            tokens.removeAll()
        case .resynchronize:
            tokens.removeAll()
            guard let latest = try? await cluster?.positions(of: hub.subscribedContainers) else { return }
            for (key, tokens) in latest {
                hub.publish(.changed(container: key.container, token: tokens.changes), to: key)
                hub.publish(.keyValueChanged(container: key.container, token: tokens.keyValues), to: key)
            }
        }
    }

    /// The decoy hash, made on first use.
    func decoy() async -> String {
        if let hash = decoyHash.value.withLock({ $0 }) { return hash }
        let hash = await Credentials.hash("not a password of anyone", cost: configuration.bcryptCost)
        decoyHash.value.withLock { $0 = hash }
        return hash
    }
}

/// The bcrypt hash checked when a login names no account, made once.
final class DecoyHash: Sendable {
    let value = Mutex<String?>(nil)
}

extension Parameters {
    /// A path parameter parsed as an identifier. - Throws: ``ProtocolError/Code/invalidIdentifier``.
    func identifier<ID: UUIDIdentifier>(_ name: String, as type: ID.Type) throws -> ID {
        try ID(try require(name))
    }
}
