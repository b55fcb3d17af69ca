import Foundation
import Logging
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An app using the engine of another process (`ubiquity sync`) when that process ends: it reaches the engine that
/// follows (or, under `.automatic`, embeds its own), and its queries miss nothing that changed meanwhile.
@Suite("An app whose external engine ends", .timeLimit(.minutes(5)))
struct EngineRecoveryTests {
    /// `ubiquity sync` for `device`, as ``TestDevice`` starts it.
    static func startEngine(for device: TestDevice, log name: String) throws -> UbiquityProcess {
        try UbiquityProcess(
            [
                "sync", "--container", device.container.string, "--profile", device.name, "--root", device.root.path,
                "--request-timeout", "10",
            ],
            environment: ["XDG_CONFIG_HOME": device.config.path],
            log: device.root.deletingLastPathComponent().appendingPathComponent("\(name).log"))
    }

    /// A query of `ubiquity`'s documents, started.
    static func documentsQuery(_ ubiquity: Ubiquity) -> MetadataQuery {
        let query = MetadataQuery(ubiquity: ubiquity)
        query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
        query.start()
        return query
    }

    static func names(_ query: MetadataQuery) -> Set<String> { Set(query.results.map(\.fileName)) }

    @Test("The engine killed and started again: the app reaches the new one, its query sees what changed meanwhile")
    func reachesTheNextEngine() async throws {
        try await withTwoDevices(.external) { laptop, desktop, _ in
            let query = Self.documentsQuery(laptop.ubiquity)
            try Data("before".utf8).write(to: desktop.documents.appendingPathComponent("Before.txt"))
            #expect(await eventually { Self.names(query).contains("Before.txt") })

            let first = try #require(laptop.engine)
            #expect(await first.killAndWait(), "the engine died of SIGKILL")
            try Data("meanwhile".utf8).write(to: desktop.documents.appendingPathComponent("Meanwhile.txt"))
            let next = try Self.startEngine(for: laptop, log: "laptop-engine-2")
            #expect(await eventually { Self.names(query).contains("Meanwhile.txt") }, "\(next.outputTail())")
            try Data("after".utf8).write(to: desktop.documents.appendingPathComponent("After.txt"))
            #expect(await eventually { Self.names(query).contains("After.txt") }, "\(next.outputTail())")
            // The app's calls reach the new engine.
            let after = laptop.documents.appendingPathComponent("After.txt")
            #expect(await eventually { (try? after.ubiquitousResourceValues())?.downloadingStatus == .current })
            query.stop()
            await next.stop(with: SIGTERM, timeout: 20)
        }
    }

    @Test("A request made while no engine runs waits for the next one, and is done by it")
    func requestWaitsForTheNextEngine() async throws {
        try await withTwoDevices(.external) { laptop, desktop, _ in
            try Data("bread".utf8).write(to: desktop.documents.appendingPathComponent("Bread.txt"))
            let bread = laptop.documents.appendingPathComponent("Bread.txt")
            #expect(await eventually { (try? bread.ubiquitousResourceValues())?.downloadingStatus == .current })
            try await FileManager.default.evictUbiquitousItem(at: bread)
            #expect(!FileManager.default.fileExists(atPath: bread.path))

            let first = try #require(laptop.engine)
            #expect(await first.killAndWait(), "the engine died of SIGKILL")
            // Asked for while no engine runs: the call waits instead of failing.
            let download = Task { try await FileManager.default.startDownloadingUbiquitousItem(at: bread) }
            let next = try Self.startEngine(for: laptop, log: "laptop-engine-2")
            try await download.value
            #expect(try String(contentsOf: bread, encoding: .utf8) == "bread", "\(next.outputTail())")
            await next.stop(with: SIGTERM, timeout: 20)
        }
    }

    @Test("Under .automatic, the app embeds an engine of its own when the external one ends, and goes on syncing")
    func embedsItsOwn() async throws {
        try await withTwoDevices(.external) { laptop, desktop, _ in
            var logger = Logger(label: "ubiquity.kit.test.automatic")
            logger.logLevel = .critical
            // A second app on the laptop, configured to use a running engine or else its own.
            let app = Ubiquity(
                configuration: UbiquityConfiguration(
                    root: laptop.root, containers: [laptop.container], profile: laptop.profile, engine: .automatic,
                    pollInterval: .seconds(5), engineWait: .seconds(30), requestTimeout: .seconds(10), logger: logger,
                    containerFolders: laptop.containerFolders))
            _ = try await app.containerURL(forIdentifier: nil)
            let query = Self.documentsQuery(app)
            try Data("before".utf8).write(to: desktop.documents.appendingPathComponent("Before.txt"))
            #expect(await eventually { Self.names(query).contains("Before.txt") })

            let first = try #require(laptop.engine)
            #expect(await first.killAndWait(), "the engine died of SIGKILL")
            try Data("after".utf8).write(to: desktop.documents.appendingPathComponent("After.txt"))
            #expect(await eventually { Self.names(query).contains("After.txt") })
            // The app runs the engine now: it holds the container's lock.
            #expect {
                _ = try ContainerSync(
                    layout: ContainerLayout(root: laptop.root, container: laptop.container),
                    client: ServiceClient(baseURL: laptop.profile.server), device: laptop.profile.device)
            } throws: { ($0 as? ProtocolError)?.code == .engineAlreadyRunning }
            query.stop()
            await app.shutdown()
        }
    }
}
