import Foundation
import Logging
import SyncEngine
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityTestSupport

/// The container's key-value store between two devices, through a live service.
@Suite("Key-value store sync between two devices")
struct KeyValueSyncTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    /// Records the key-value events of one device, from its creation on.
    final class Heard: Sendable {
        private let events = Mutex<[([String], KeyValueChangeReason)]>([])

        init(_ sync: ContainerSync) {
            let stream = sync.events()
            // Listens until the device's sync goes away or the test ends.
            Task { [weak self] in
                for await event in stream {
                    guard let self else { return }
                    if case .keyValuesChanged(let keys, let reason) = event {
                        self.events.withLock { $0.append((keys, reason)) }
                    }
                }
            }
        }

        func saw(_ keys: [String], _ reason: KeyValueChangeReason) -> Bool {
            events.withLock { $0.contains { $0.0 == keys && $0.1 == reason } }
        }
    }

    private func withDevices(
        _ body: (LocalService, ContainerSync, ContainerSync) async throws -> Void
    ) async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-kv-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        func device(_ name: String) async throws -> ContainerSync {
            let client = try await service.signIn(account: "ada", device: name)
            return try ContainerSync(
                layout: ContainerLayout(root: root.appendingPathComponent(name), container: Self.container),
                client: client, device: SavingDevice(id: DeviceID(), name: name))
        }
        let laptop = try await device("laptop")
        let desktop = try await device("desktop")
        do {
            try await body(service, laptop, desktop)
        } catch {
            await service.remove()
            throw error
        }
        await service.remove()
    }

    @Test("A value set on one device reaches the other: the first time as the initial sync, then as a server change")
    func valuesReachTheOtherDevice() async throws {
        try await withDevices { _, laptop, desktop in
            let heard = Heard(desktop)
            try await laptop.setKeyValues(["sortOrder": .string("name"), "fontSize": .integer(14)])
            #expect(try await laptop.keyValues()["sortOrder"] == .string("name"), "taken at once, before any sync")
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(try await desktop.keyValues() == ["sortOrder": .string("name"), "fontSize": .integer(14)])
            #expect(await eventually { heard.saw(["fontSize", "sortOrder"], .initialSyncChange) })

            try await laptop.setKeyValues(["sortOrder": .string("date")], removing: ["fontSize"])
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(try await desktop.keyValues() == ["sortOrder": .string("date")])
            #expect(await eventually { heard.saw(["fontSize", "sortOrder"], .serverChange) })
        }
    }

    @Test("One key written on both devices settles on the later write everywhere")
    func laterWriteWins() async throws {
        try await withDevices { _, laptop, desktop in
            try await laptop.setKeyValues(["sortOrder": .string("name")])
            try await Task.sleep(for: .milliseconds(20))
            try await desktop.setKeyValues(["sortOrder": .string("date")])  // later
            try await desktop.syncOnce()
            try await laptop.syncOnce()  // the earlier write arrives last
            try await desktop.syncOnce()
            #expect(try await laptop.keyValues()["sortOrder"] == .string("date"))
            #expect(try await desktop.keyValues()["sortOrder"] == .string("date"))
        }
    }

    @Test("Writes over Apple's limits are refused whole and heard of as quota violations; nothing is stored")
    func limitsAreKept() async throws {
        try await withDevices { _, laptop, _ in
            let heard = Heard(laptop)
            await #expect {
                try await laptop.setKeyValues([String(repeating: "k", count: 65): .bool(true)])
            } throws: { ($0 as? ProtocolError)?.code == .keyValueKeyTooLong }

            let many = Dictionary(uniqueKeysWithValues: (0..<1025).map { ("key\($0)", PropertyListValue.integer(1)) })
            await #expect {
                try await laptop.setKeyValues(many)
            } throws: { ($0 as? ProtocolError)?.code == .keyValueTooManyKeys }
            await #expect {
                try await laptop.setKeyValues(["big": .data(Data(count: 1_100_000))])
            } throws: { ($0 as? ProtocolError)?.code == .keyValueStoreTooLarge }
            let stored = try await laptop.keyValues()
            #expect(stored.isEmpty)
            #expect(await eventually { heard.saw(["big"], .quotaViolationChange) })
        }
    }

    @Test(
        "Writes the service refuses because another device filled the store are dropped, heard of as a quota violation, and the service's values come back"
    )
    func serviceQuotaViolation() async throws {
        try await withDevices { _, laptop, desktop in
            let heard = Heard(desktop)
            try await laptop.setKeyValues(["photo": .data(Data(count: 600_000))])
            try await laptop.syncOnce()
            // The desktop does not know yet: its own 600 KB fits its view of the store.
            try await desktop.setKeyValues(["scan": .data(Data(count: 600_000))])
            try await desktop.syncOnce()
            #expect(await eventually { heard.saw(["scan"], .quotaViolationChange) })
            let values = try await desktop.keyValues()
            #expect(values["scan"] == nil)
            #expect(values["photo"] == .data(Data(count: 600_000)))
        }
    }

    @Test("A write made with the service down is kept across a restart and sent when it is back")
    func pendingWritesSurvive() async throws {
        try await withDevices { service, laptop, desktop in
            try await laptop.syncOnce()
            await service.stop()
            try await laptop.setKeyValues(["sortOrder": .string("aisle")])
            await #expect(throws: (any Error).self) { try await laptop.syncOnce() }
            // The engine stops (letting its lock go) and starts again: the write is still there, still to be sent.
            laptop.releaseLock()
            let restarted = try ContainerSync(
                layout: laptop.layout, client: laptop.client, device: laptop.device,
                configuration: laptop.configuration)
            #expect(try await restarted.keyValues()["sortOrder"] == .string("aisle"))
            let back = try await LocalService.start(in: service.directory, port: service.port)
            try await restarted.syncOnceAfterRestart()
            try await desktop.syncOnceAfterRestart()
            #expect(try await desktop.keyValues()["sortOrder"] == .string("aisle"))
            await back.stop()
        }
    }

    @Test("Running engines carry a key-value write to the other device by themselves (push)")
    func runningEnginesCarryWrites() async throws {
        try await withDevices { service, laptop, desktop in
            var logger = Logger(label: "ubiquity.kv.test")
            logger.logLevel = .critical
            let engines = [laptop, desktop].map { sync in
                var engine = ContainerEngine(sync: sync, pushToken: sync.client.token, logger: logger)
                engine.pollInterval = .seconds(3600)  // only push may bring the change
                return engine
            }
            let running = engines.map { engine in Task { try await engine.run() } }
            defer { for task in running { task.cancel() } }
            let heard = Heard(desktop)
            #expect(
                await eventually { service.service.hub.subscriberCount(to: Self.container) == 2 },
                "both engines subscribed to the container's news")
            try await laptop.setKeyValues(["sortOrder": .string("aisle")])
            #expect(
                await eventually {
                    heard.saw(["sortOrder"], .serverChange) || heard.saw(["sortOrder"], .initialSyncChange)
                })
            #expect(try await desktop.keyValues()["sortOrder"] == .string("aisle"))
            for task in running { task.cancel() }
            for task in running { _ = await task.result }
        }
    }
}
