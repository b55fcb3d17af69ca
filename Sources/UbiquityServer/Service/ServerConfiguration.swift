import Foundation
import UbiquityProtocol

/// Everything an operator sets about a service; every field has a documented default.
///
/// ```swift
/// var configuration = ServerConfiguration(dataDirectory: URL(fileURLWithPath: "/var/lib/ubiquity"))
/// configuration.port = 8443
/// configuration.tls = .init(certificatePath: "cert.pem", privateKeyPath: "key.pem")
/// ```
public struct ServerConfiguration: Sendable {
    /// A certificate chain and private key, both PEM files, for serving HTTPS and WSS.
    public struct TLS: Sendable, Hashable {
        /// The certificate chain (PEM).
        public var certificatePath: String
        /// The private key (PEM).
        public var privateKeyPath: String

        /// Creates a TLS setting.
        public init(certificatePath: String, privateKeyPath: String) {
            self.certificatePath = certificatePath
            self.privateKeyPath = privateKeyPath
        }
    }

    /// Sizes the service accepts.
    public struct Limits: Sendable, Hashable {
        /// The largest JSON body, in bytes (default 8 MiB: a manifest of a multi-gigabyte file fits).
        public var jsonBodyBytes: Int
        /// The largest chunk, in bytes (default 16 MiB).
        public var chunkBytes: Int
        /// The most chunks one `chunks/missing` request may ask about (default 100,000).
        public var chunksPerRequest: Int
        /// The largest body of a batch of chunks, in bytes (default 64 MiB).
        public var chunkBatchBytes: Int
        /// The most changes one feed page may hold (default 1,000; a larger `limit` is lowered to it).
        public var changesPerPage: Int

        /// Creates limits; the defaults are documented on each field.
        public init(
            jsonBodyBytes: Int = 8 << 20, chunkBytes: Int = 16 << 20, chunksPerRequest: Int = 100_000,
            changesPerPage: Int = 1_000, chunkBatchBytes: Int = 64 << 20
        ) {
            self.chunkBatchBytes = chunkBatchBytes
            self.jsonBodyBytes = jsonBodyBytes
            self.chunkBytes = chunkBytes
            self.chunksPerRequest = chunksPerRequest
            self.changesPerPage = changesPerPage
        }
    }

    /// The folder holding the database and chunks (`ubiquity.sqlite`, `chunks/`, unless ``database`` and
    /// ``chunkStore`` name other places).
    public var dataDirectory: URL
    /// The address to listen on (default `127.0.0.1`).
    public var host: String
    /// The port to listen on (default 8080; 0 picks a free one).
    public var port: Int
    /// HTTPS and WSS when set (default: plain HTTP).
    public var tls: TLS?
    /// Whether anyone may create an account with `POST /v1/accounts` (default `false`: accounts come from
    /// `ubiquity server add-user`).
    public var openRegistration: Bool
    /// The quota of accounts made by registration, in bytes (default `nil`: unlimited).
    public var defaultQuotaBytes: Int64?
    /// The bcrypt cost of password hashes (default 12; 4 to 31).
    public var bcryptCost: UInt8
    /// Body and request sizes.
    public var limits: Limits
    /// How long old versions are kept.
    public var retention: VersionRetention
    /// The limits of each key-value store (default Apple's).
    public var keyValueLimits: KeyValueLimits
    /// How often a push connection gets a heartbeat (default 20 s).
    public var heartbeatInterval: Duration
    /// How hard commits are pushed to disk.
    public var durability: SQLiteMetadataStore.Durability
    /// Where chunk bytes live: `nil` (the default) for `chunks/` in ``dataDirectory``, or
    /// `s3://BUCKET?endpoint=URL[&region=R][&prefix=P]` for S3-compatible object storage, its keys from the
    /// environment (``S3Client/Configuration/init(url:environment:)``).
    public var chunkStore: String?
    /// Where metadata lives: `nil` (the default) for `ubiquity.sqlite` in ``dataDirectory``, or
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=S&sslmode=require&pool=N]` for PostgreSQL, shared by
    /// any number of nodes (``PostgresMetadataStore/open(url:retention:clock:environment:logger:)``).
    public var database: String?
    /// How long a node trusts a device token it checked without asking the database again (default 5 s). A token
    /// revoked through another node is dropped at once when the nodes share PostgreSQL (they tell each other), and
    /// within this time should that message be lost.
    public var tokenCacheLifetime: Duration = .seconds(5)

    /// Creates a configuration with the documented defaults.
    public init(
        dataDirectory: URL, host: String = "127.0.0.1", port: Int = 8080, tls: TLS? = nil,
        openRegistration: Bool = false, defaultQuotaBytes: Int64? = nil, bcryptCost: UInt8 = 12,
        limits: Limits = Limits(), retention: VersionRetention = VersionRetention(),
        keyValueLimits: KeyValueLimits = .apple, heartbeatInterval: Duration = .seconds(20),
        durability: SQLiteMetadataStore.Durability = .processCrash, chunkStore: String? = nil,
        database: String? = nil
    ) {
        self.dataDirectory = dataDirectory
        self.host = host
        self.port = port
        self.tls = tls
        self.openRegistration = openRegistration
        self.defaultQuotaBytes = defaultQuotaBytes
        self.bcryptCost = bcryptCost
        self.limits = limits
        self.retention = retention
        self.keyValueLimits = keyValueLimits
        self.heartbeatInterval = heartbeatInterval
        self.durability = durability
        self.chunkStore = chunkStore
        self.database = database
    }
}
