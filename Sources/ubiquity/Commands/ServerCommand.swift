import ArgumentParser
import Foundation
import Hummingbird
import Logging
import SyncEngine
import UbiquityServer

/// `ubiquity server`: run the sync service, and manage its accounts.
struct ServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server",
        abstract: "Run the sync service (embedded SQLite and chunk store in one data directory).",
        subcommands: [Serve.self, AddUser.self, Migrate.self],
        defaultSubcommand: Serve.self
    )
}

/// The options every `ubiquity server` subcommand shares.
struct DataDirectoryOptions: ParsableArguments {
    @Option(help: "The data directory (database and chunks); made when missing.")
    var data: String = Self.defaultDataDirectory

    static var defaultDataDirectory: String {
        let base =
            ProcessInfo.processInfo.environment["XDG_DATA_HOME"]
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".local/share")
        return (base as NSString).appendingPathComponent("ubiquity-server")
    }

    @Option(
        help: ArgumentHelp(
            "Where metadata lives (default: ubiquity.sqlite in the data directory; also UBIQUITY_DATABASE).",
            discussion: """
                postgres://USER@HOST[:PORT]/DATABASE[?schema=SCHEMA&sslmode=require&pool=N] keeps it in PostgreSQL, \
                shared by every node given the same URL; the password is read from UBIQUITY_DATABASE_PASSWORD \
                (or PGPASSWORD) unless the URL holds it.
                """))
    var database: String?

    var url: URL { URL(fileURLWithPath: data, isDirectory: true) }

    /// The metadata store's address: `--database`, else `UBIQUITY_DATABASE`, else the embedded default (`nil`).
    var databaseURL: String? { database ?? ProcessInfo.processInfo.environment["UBIQUITY_DATABASE"] }

    /// Where the data is, for a log line: without any secret an address may hold.
    func describe(chunks: String?) -> String {
        var parts = [data]
        if let host = databaseURL.flatMap({ URLComponents(string: $0) }) {
            parts.append("database: postgres://\(host.host ?? "")\(host.port.map { ":\($0)" } ?? "")\(host.path)")
        }
        if let bucket = chunks.flatMap({ URLComponents(string: $0)?.host }) { parts.append("chunks: s3://\(bucket)") }
        return parts.joined(separator: ", ")
    }
}

extension ServerCommand {
    /// `ubiquity server [serve]`: run until interrupted (SIGINT or SIGTERM), shutting down gracefully.
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the service.")

        @OptionGroup var storage: DataDirectoryOptions
        @Option(help: "The address to listen on.") var host = "127.0.0.1"
        @Option(help: "The port to listen on (0 picks a free one; the chosen one is printed).") var port = 8080
        @Option(help: "A PEM certificate chain; serves HTTPS and WSS together with --tls-key.")
        var tlsCertificate: String?
        @Option(help: "The PEM private key of --tls-certificate.") var tlsKey: String?
        @Flag(help: "Let anyone create an account with POST /v1/accounts.") var openRegistration = false
        @Option(help: "The quota of registered accounts, in bytes.") var defaultQuota: Int64?
        @Option(help: "The bcrypt cost of password hashes (4 to 31).") var bcryptCost: UInt8 = 12
        @Option(help: "Days old versions are kept.") var retentionDays: Double = 30
        @Option(help: "Old versions kept per item.") var retentionCount = 50
        @Option(help: "Log level (trace, debug, info, notice, warning, error, critical).") var logLevel = "info"
        @Option(
            help: "Seconds a stopping server (SIGTERM) lets requests under way finish before it cuts them (0 to 600).")
        var shutdownGrace = 8
        @Option(
            help: ArgumentHelp(
                "Where chunk bytes live (default: chunks/ in the data directory; also UBIQUITY_CHUNKS).",
                discussion: """
                    s3://BUCKET?endpoint=URL[&region=REGION][&prefix=PREFIX] keeps them in S3-compatible object \
                    storage; its keys are read from UBIQUITY_S3_ACCESS_KEY and UBIQUITY_S3_SECRET_KEY.
                    """))
        var chunks: String?

        func validate() throws {
            guard (tlsCertificate == nil) == (tlsKey == nil) else {
                throw ValidationError("--tls-certificate and --tls-key go together")
            }
            guard (4...31).contains(bcryptCost) else { throw ValidationError("--bcrypt-cost is 4 to 31") }
            guard (0...65_535).contains(port) else { throw ValidationError("--port is 0 to 65535") }
            guard (0...600).contains(shutdownGrace) else { throw ValidationError("--shutdown-grace is 0 to 600") }
        }

        func run() async throws {
            AllocatorArenas.limitToCores()
            let trimming = Task { await AllocatorArenas.releaseFreeMemory(every: .seconds(1)) }
            defer { trimming.cancel() }
            var logger = Logger(label: "ubiquity.server")
            logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
            var configuration = ServerConfiguration(
                dataDirectory: storage.url, host: host, port: port, openRegistration: openRegistration,
                defaultQuotaBytes: defaultQuota, bcryptCost: bcryptCost,
                retention: VersionRetention(maximumCount: retentionCount, maximumAge: retentionDays * 86_400))
            if let tlsCertificate, let tlsKey {
                configuration.tls = .init(certificatePath: tlsCertificate, privateKeyPath: tlsKey)
            }
            configuration.chunkStore = chunks ?? ProcessInfo.processInfo.environment["UBIQUITY_CHUNKS"]
            configuration.database = storage.databaseURL
            let service = try await UbiquityService(configuration: configuration, logger: logger)
            let address = "\(configuration.tls == nil ? "http" : "https")://\(host)"
            let data = storage.describe(chunks: configuration.chunkStore)
            let application = try service.makeApplication { channel in
                let port = channel.localAddress?.port ?? 0
                // Scripts and tests read the port from this line, so it goes out at once.
                FileHandle.standardOutput.write(
                    Data("ubiquity server listening on \(address):\(port) (data: \(data))\n".utf8))
            }
            try await UbiquityService.run(application, logger: logger, gracePeriod: .seconds(shutdownGrace))
        }
    }

    /// `ubiquity server add-user NAME`: make an account; the password is read from standard input.
    struct AddUser: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-user", abstract: "Create an account (password read from standard input).")

        @OptionGroup var storage: DataDirectoryOptions
        @Argument(help: "The account name.") var name: String
        @Option(help: "The account's storage quota in bytes (default: unlimited).") var quota: Int64?
        @Option(help: "The bcrypt cost of the password hash (4 to 31).") var bcryptCost: UInt8 = 12

        func run() async throws {
            guard let password = readLine(strippingNewline: true), !password.isEmpty else {
                throw ValidationError("give the password on standard input")
            }
            let service = try await UbiquityService(
                configuration: ServerConfiguration(
                    dataDirectory: storage.url, bcryptCost: bcryptCost, database: storage.databaseURL))
            let account = try await service.addUser(name: name, password: password, quotaBytes: quota)
            print("created account \(account.name) (\(account.id))")
        }
    }

    /// `ubiquity server migrate --from DIR --to-database URL [--to-chunks URL]`: copy an embedded deployment to
    /// PostgreSQL (and S3-compatible storage), keeping every account, token and feed position.
    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate",
            abstract: "Copy a data directory's deployment to PostgreSQL (and S3-compatible storage).",
            discussion: """
                Stop the service on the data directory first. Devices keep their tokens and feed positions. A run \
                that was interrupted is run again: what was copied is not sent twice. The target is checked at the \
                end (every version's chunks present, every table complete); problems are listed and the exit \
                status is 1.
                """)

        @Option(help: "The data directory to copy from.") var from: String
        @Option(help: "The PostgreSQL database to copy to: postgres://USER@HOST[:PORT]/DATABASE[?schema=S].")
        var toDatabase: String
        @Option(help: "The S3-compatible storage to copy chunks to: s3://BUCKET?endpoint=URL (default: they stay).")
        var toChunks: String?
        @Flag(help: "Read every chunk back from the target and check it against its hash.") var verify = false

        func run() async throws {
            let migration = DeploymentMigration(
                from: URL(fileURLWithPath: from, isDirectory: true), toDatabase: toDatabase, toChunks: toChunks)
            let report = try await migration.run(verify: verify) { line in
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
            let rows = report.rows.values.reduce(0, +)
            print(
                "copied \(rows) rows and \(report.chunksCopied) chunks (\(report.chunksPresent) already there)")
            guard report.problems.isEmpty else {
                for problem in report.problems { print("problem: \(problem)") }
                throw ExitCode(1)
            }
            print("checked: every version's chunks are there and every table is complete")
        }
    }
}
