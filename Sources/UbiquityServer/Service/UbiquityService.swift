import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import UbiquityProtocol

/// The sync service: the routes under `/v1`, push, and operations endpoints over a pair of storage drivers.
///
/// ```swift
/// let service = try UbiquityService(configuration: ServerConfiguration(dataDirectory: dataURL))
/// try await UbiquityService.run(service.makeApplication(), logger: logger)   // until SIGINT or SIGTERM
/// ```
public struct UbiquityService: Sendable {
    /// The configuration it runs with.
    public let configuration: ServerConfiguration
    /// Where metadata lives.
    public let store: any MetadataStore
    /// Where chunk bytes live.
    public let chunks: any ChunkStore
    /// The push fan-out.
    public let hub: PushHub
    /// How this node tells the others sharing its database of changes (`nil`: it is the only one).
    public let cluster: (any ClusterBus)?
    /// The service's figures.
    public let metrics: ServerMetrics
    /// Every route the service answers (HTTP and WebSocket), as registered.
    public let routes: [RouteSignature]
    let logger: Logger

    /// A service on the embedded default storage in `configuration.dataDirectory`: `ubiquity.sqlite` and
    /// `chunks/`, both made when missing; or the metadata in the PostgreSQL database of `configuration.database`,
    /// and the chunks in the S3 bucket of `configuration.chunkStore`. Uploads a crash interrupted are cleared.
    public init(configuration: ServerConfiguration, logger: Logger = Logger(label: "ubiquity.server")) async throws {
        try FileManager.default.createDirectory(at: configuration.dataDirectory, withIntermediateDirectories: true)
        let store: any MetadataStore
        if let database = configuration.database {
            store = try await PostgresMetadataStore.open(url: database, retention: configuration.retention)
        } else {
            store = try SQLiteMetadataStore(
                path: configuration.dataDirectory.appendingPathComponent("ubiquity.sqlite", isDirectory: false).path,
                retention: configuration.retention, durability: configuration.durability)
        }
        let chunks: any ChunkStore
        if let location = configuration.chunkStore {
            chunks = try await S3ChunkStore.open(url: location)
        } else {
            chunks = try FileChunkStore(
                root: configuration.dataDirectory.appendingPathComponent("chunks", isDirectory: true))
        }
        try await chunks.removeAbandonedUploads()
        let cluster = (store as? PostgresMetadataStore)?.makeClusterBus()
        self.init(configuration: configuration, store: store, chunks: chunks, cluster: cluster, logger: logger)
    }

    /// A service on the given drivers.
    public init(
        configuration: ServerConfiguration, store: any MetadataStore, chunks: any ChunkStore,
        cluster: (any ClusterBus)? = nil, logger: Logger = Logger(label: "ubiquity.server")
    ) {
        self.configuration = configuration
        self.cluster = cluster
        self.store = store
        self.chunks = chunks
        self.logger = logger
        let hub = PushHub()
        let metrics = ServerMetrics()
        self.hub = hub
        self.metrics = metrics
        self.routes =
            Self.routers(
                for: RouteEnvironment(
                    store: store, chunks: chunks, hub: hub, configuration: configuration, metrics: metrics,
                    cluster: nil)
            ).routes
    }

    /// The routers of the service, and every route they hold.
    private static func routers(for environment: RouteEnvironment) -> (
        http: Router<ServerRequestContext>, push: Router<PushRequestContext>, routes: [RouteSignature]
    ) {
        let catalog = RouteCatalog()
        let router = RecordingRouter(Router(context: ServerRequestContext.self))
        router.add(middleware: MetricsMiddleware(metrics: environment.metrics))
        // One structured line per request at debug level (`--log-level debug`); never the Authorization header.
        router.add(middleware: LogRequestsMiddleware(.debug))
        router.add(middleware: ErrorMiddleware(catalog: catalog))
        environment.addOperationsRoutes(to: router)
        let v1 = router.group("v1")
        environment.addOpenAccountRoutes(to: v1)
        let authenticated = v1.add(
            middleware: AuthenticationMiddleware(store: environment.store, cache: environment.tokens))
        environment.addAccountRoutes(to: authenticated)
        environment.addItemRoutes(to: authenticated)
        environment.addDraftRoutes(to: authenticated)
        environment.addChunkRoutes(to: authenticated)
        environment.addFeedRoutes(to: authenticated)
        environment.addPushFallbackRoute(to: authenticated)

        let pushRouter = RecordingRouter(Router(context: PushRequestContext.self))
        pushRouter.add(middleware: ErrorMiddleware(catalog: catalog))
        pushRouter.add(middleware: AuthenticationMiddleware(store: environment.store, cache: environment.tokens))
        environment.addPushRoutes(to: pushRouter.group("v1"))
        catalog.set(router.routes + pushRouter.routes)
        return (router.router, pushRouter.router, router.routes + pushRouter.routes)
    }

    /// The application serving the service on the configured host and port (TLS when configured).
    /// - Parameter onServerRunning: Called with the listening channel (its `localAddress` has the real port).
    public func makeApplication(onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }) throws
        -> some ApplicationProtocol
    {
        let environment = RouteEnvironment(
            store: TimedMetadataStore(base: store, timings: metrics.database),
            chunks: TimedChunkStore(base: chunks, timings: metrics.chunkStore), hub: hub,
            configuration: configuration, metrics: metrics, cluster: cluster,
            drafts: (store as? PostgresMetadataStore).map { PostgresDraftStore(store: $0) } ?? DraftBoard())
        let routers = Self.routers(for: environment)
        let webSocketResponder = routers.push.buildResponder()
        let webSocket = HTTP1WebSocketUpgradeChannel.Configuration(
            ws: .init(maxFrameSize: 1 << 20, autoPing: .enabled(timePeriod: .seconds(30))))
        var server = HTTPServerBuilder { responder in
            UnusedConnectionCloser(
                HTTP1WebSocketUpgradeChannel(
                    responder: responder, webSocketResponder: webSocketResponder, configuration: webSocket))
        }
        if let tls = configuration.tls {
            let certificates = try NIOSSLCertificate.fromPEMFile(tls.certificatePath).map {
                NIOSSLCertificateSource.certificate($0)
            }
            let key = try NIOSSLPrivateKey(file: tls.privateKeyPath, format: .pem)
            let tlsConfiguration = TLSConfiguration.makeServerConfiguration(
                certificateChain: certificates, privateKey: .privateKey(key))
            server = try .tls(server, tlsConfiguration: tlsConfiguration)
        }
        let listening = cluster.map { ClusterListening(bus: $0) { signal in await environment.hear(signal) } }
        return Application(
            router: routers.http, server: server,
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "ubiquity"),
            services: listening.map { [$0] } ?? [], onServerRunning: onServerRunning, logger: logger)
    }

    /// How long a stopping service lets requests under way finish (``run(_:logger:gracePeriod:)``).
    public static let shutdownGracePeriod: Duration = .seconds(8)

    /// Runs `application` until SIGTERM or SIGINT, then stops it for a rolling restart: no new connection is
    /// accepted, idle connections are closed, push connections are closed (devices reconnect, to another node
    /// behind the same address, and catch up from the feed), and each request under way may finish within
    /// `gracePeriod`. What is still running then — a client trickling an upload's body, say — is cancelled and its
    /// connection closed, so the process ends within about the grace period whatever its clients do; a device
    /// whose request was cut sends it again, and nothing it was not told was committed is.
    public static func run(
        _ application: some Service, logger: Logger, gracePeriod: Duration = shutdownGracePeriod
    ) async throws {
        var configuration = ServiceGroupConfiguration(
            services: [.init(service: application)], gracefulShutdownSignals: [.sigterm, .sigint],
            cancellationSignals: [], logger: logger)
        configuration.maximumGracefulShutdownDuration = gracePeriod
        try await ServiceGroup(configuration: configuration).run()
    }

    /// Makes an account from the operator's command line (`ubiquity server add-user`).
    /// - Throws: ``ProtocolError/Code/invalidAccount`` or ``ProtocolError/Code/accountExists``.
    public func addUser(name: String, password: String, quotaBytes: Int64?) async throws -> AccountRecord {
        try Credentials.validate(name: name, password: password)
        let hash = await Credentials.hash(password, cost: configuration.bcryptCost)
        return try await store.createAccount(name: name, passwordHash: hash, quotaBytes: quotaBytes)
    }
}
