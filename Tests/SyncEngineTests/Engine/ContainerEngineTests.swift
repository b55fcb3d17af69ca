import Foundation
import Logging
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

@Suite("The running engine: file-system events and push drive sync")
struct ContainerEngineTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    @Test("A file saved on one device appears on the other with no call to sync: inotify up, push down")
    func eventsDriveSync() async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-engines-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        var logger = Logger(label: "ubiquity.engine.test")
        logger.logLevel = .critical
        func engine(_ name: String) async throws -> ContainerEngine {
            let client = try await service.signIn(account: "ada", device: name)
            let layout = ContainerLayout(root: root.appendingPathComponent(name), container: Self.container)
            let sync = try ContainerSync(
                layout: layout, client: client, device: SavingDevice(id: DeviceID(), name: name), logger: logger)
            var engine = ContainerEngine(sync: sync, pushToken: client.token, logger: logger)
            engine.pollInterval = .seconds(3600)  // no polling: only events may bring the change
            return engine
        }
        let laptop = try await engine("laptop")
        let desktop = try await engine("desktop")
        // Both engines run until the test cancels them.
        let running = [Task { try await laptop.run() }, Task { try await desktop.run() }]
        defer { for task in running { task.cancel() } }

        // A second engine for the same container is refused while the first runs: it cannot take the lock.
        #expect {
            _ = try ContainerSync(
                layout: desktop.sync.layout, client: desktop.sync.client, device: desktop.sync.device, logger: logger)
        } throws: { error in
            (error as? ProtocolError)?.code == .engineAlreadyRunning
        }

        let source = laptop.sync.layout.documents.appendingPathComponent("Pushed.txt")
        let target = desktop.sync.layout.documents.appendingPathComponent("Pushed.txt")
        try Data("hello from the laptop".utf8).write(to: source)
        // A guard against hanging, not a timing: the suite's first minute starts every suite at once on two cores.
        let arrived = await eventually(.seconds(180)) {
            (try? Data(contentsOf: target)) == Data("hello from the laptop".utf8)
        }
        #expect(arrived, "the file reached the other device")

        try Data("edited on the desktop".utf8).write(to: target)
        let returned = await eventually(.seconds(180)) {
            (try? Data(contentsOf: source)) == Data("edited on the desktop".utf8)
        }
        #expect(returned, "the edit came back")
        for task in running { task.cancel() }
        for task in running { _ = await task.result }
        await service.remove()
    }
}
