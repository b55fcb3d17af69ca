import Foundation
import Logging
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

/// Where a test device's sync engine runs: in the test process (UbiquityKit embeds it), or in a `ubiquity sync`
/// child process reached over its socket. Every UbiquityKit test runs both ways.
enum EngineMode: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case embedded, external
    var testDescription: String { rawValue }
}

/// One device of a test: its own container root, signed-in profile and ``Ubiquity`` instance, and — in external
/// mode — its `ubiquity sync` process.
final class TestDevice: Sendable {
    let name: String
    let mode: EngineMode
    let root: URL
    /// `XDG_CONFIG_HOME` of the device's processes (its profile is `<config>/ubiquity/<name>.json`).
    let config: URL
    let container: ContainerID
    let profile: DeviceProfile
    let ubiquity: Ubiquity
    let engine: UbiquityProcess?

    static let containerID = try! ContainerID("TEAM.com.example.grocery")

    /// The container folder.
    var folder: URL { root.appendingPathComponent(container.string, isDirectory: true) }
    /// Its `Documents/`.
    var documents: URL { folder.appendingPathComponent("Documents", isDirectory: true) }

    /// Signs device `name` in to `service` as `account` and starts UbiquityKit (and, in external mode, the engine
    /// process) for it under `directory`.
    init(
        _ name: String, mode: EngineMode, account: String, service: LocalService, directory: URL,
        eagerDownloadLimit: Int64 = 1 << 20
    ) async throws {
        self.name = name
        self.mode = mode
        root = directory.appendingPathComponent("\(name)-root", isDirectory: true)
        config = directory.appendingPathComponent("\(name)-config", isDirectory: true)
        container = Self.containerID
        let client = try await service.signIn(account: account, device: name)
        profile = DeviceProfile(
            server: service.baseURL, account: account, token: client.token ?? "",
            device: SavingDevice(id: DeviceID(), name: name))
        let profiles = config.appendingPathComponent("ubiquity", isDirectory: true)
        try profile.save(as: name, in: profiles)
        if mode == .external {
            engine = try UbiquityProcess(
                [
                    "sync", "--container", container.string, "--profile", name, "--root", root.path,
                    "--eager-download-limit", String(eagerDownloadLimit), "--request-timeout", "10",
                ],
                environment: ["XDG_CONFIG_HOME": config.path],
                log: directory.appendingPathComponent("\(name)-engine.log"))
        } else {
            engine = nil
        }
        var logger = Logger(label: "ubiquity.kit.test.\(name)")
        logger.logLevel = .critical
        ubiquity = Ubiquity(
            configuration: UbiquityConfiguration(
                root: root, containers: [container], profile: profile,
                engine: mode == .external ? .external : .embedded,
                sync: ContainerSync.Configuration(eagerDownloadLimit: eagerDownloadLimit), pollInterval: .seconds(5),
                engineWait: .seconds(30), requestTimeout: .seconds(10), logger: logger,
                containerFolders: Self.containerFolders(config: config)))
    }

    /// The record of container folders set up on the device, which its `ubiquity sync` keeps too.
    var containerFolders: ContainerFolderRegister { Self.containerFolders(config: config) }

    private static func containerFolders(config: URL) -> ContainerFolderRegister {
        ContainerFolderRegister(folder: config.appendingPathComponent("ubiquity/containers", isDirectory: true))
    }

    /// The container folder, once its engine is there.
    @discardableResult
    func start() async throws -> URL {
        guard let url = try await ubiquity.containerURL(forIdentifier: nil) else {
            throw ChildProcessFailure("\(name) is not signed in")
        }
        return url
    }

    /// Stops UbiquityKit and the engine process.
    func stop() async {
        await ubiquity.shutdown()
        if let engine { await engine.stop(with: SIGTERM, timeout: 20) }
        if let engine, engine.isRunning { await engine.killAndWait() }
    }

    /// The engine process's output, for failure messages.
    var engineLog: String { engine?.outputTail() ?? "" }
}

/// Runs `body` with two devices ("laptop" and "desktop") of one account against a new service on loopback, both
/// started, then stops everything and removes the files.
func withTwoDevices(
    _ mode: EngineMode, eagerDownloadLimit: Int64 = 1 << 20, isolation: isolated (any Actor)? = #isolation,
    _ body: (_ laptop: TestDevice, _ desktop: TestDevice, _ service: LocalService) async throws -> Void
) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "ubiquity-kit-test-\(UUID().uuidString.prefix(8))", isDirectory: true)
    let service = try await LocalService.start(in: directory.appendingPathComponent("service"))
    var devices: [TestDevice] = []
    do {
        for name in ["laptop", "desktop"] {
            devices.append(
                try await TestDevice(
                    name, mode: mode, account: "alice", service: service, directory: directory,
                    eagerDownloadLimit: eagerDownloadLimit))
        }
        for device in devices { try await device.start() }
        try await body(devices[0], devices[1], service)
    } catch {
        for device in devices where device.engine != nil {
            Issue.record("\(device.name)'s engine said: \(device.engineLog)")
        }
        for device in devices { await device.stop() }
        await service.remove()
        try? FileManager.default.removeItem(at: directory)
        throw error
    }
    for device in devices { await device.stop() }
    await service.remove()
    try? FileManager.default.removeItem(at: directory)
}
