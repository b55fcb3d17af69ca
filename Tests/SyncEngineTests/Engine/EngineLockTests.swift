import Foundation
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

/// One engine per container on a machine: the engine takes the container's lock when it opens it and keeps it until
/// it lets go, so two engines never write one container's files and state database at once.
@Suite("One engine per container")
struct EngineLockTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    /// A client of a service that is never asked anything: opening a container does not reach the service.
    static let client = ServiceClient(baseURL: "http://127.0.0.1:9")

    private func withRoot(_ body: (URL) async throws -> Void) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-lock-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try await body(root)
    }

    /// Opens the container `container` under `root`, from a layout of its own (as another part of the app would).
    private func open(
        _ root: URL, _ container: ContainerID = Self.container, client: ServiceClient = Self.client
    ) throws -> ContainerSync {
        try ContainerSync(
            layout: ContainerLayout(root: root, container: container), client: client,
            device: SavingDevice(id: DeviceID(), name: "laptop"))
    }

    private func isAlreadyRunning(_ error: any Error) -> Bool {
        (error as? ProtocolError)?.code == .engineAlreadyRunning
    }

    @Test("A second engine for a container that has one is refused with engineAlreadyRunning, however often it tries")
    func secondEngineIsRefused() async throws {
        try await withRoot { root in
            let first = try open(root)
            #expect { try open(root) } throws: { isAlreadyRunning($0) }
            // The refused attempt closed its own handle of the lock file: the first engine still holds the lock.
            #expect { try open(root) } throws: { isAlreadyRunning($0) }
            withExtendedLifetime(first) {}
        }
    }

    @Test("Once the engine lets its lock go, another opens the container and finds what the first recorded")
    func releasedLockLetsAnotherOpen() async throws {
        let service = try await LocalService.start()
        do {
            try await withRoot { root in
                try await reopen(root, client: try await service.signIn(account: "ada", device: "laptop"))
            }
        } catch {
            await service.remove()
            throw error
        }
        await service.remove()
    }

    /// Opens the container, syncs a file, lets the lock go and opens the container again.
    private func reopen(_ root: URL, client: ServiceClient) async throws {
        let first = try open(root, client: client)
        let path = try ItemPath("Documents/List.txt")
        try Data("milk".utf8).write(to: first.layout.url(of: path))
        try await first.syncOnce()
        #expect { try open(root, client: client) } throws: { isAlreadyRunning($0) }

        first.releaseLock()
        let second = try open(root, client: client)
        let item = try #require(try await second.item(at: path), "the first engine's records are not there")
        #expect(!item.isPlaceholder)
        try await second.syncOnce()
        #expect(try await second.item(at: path)?.baseVersion == item.baseVersion, "the item is not in step")
        #expect { try open(root, client: client) } throws: { isAlreadyRunning($0) }
        withExtendedLifetime(second) {}
    }

    @Test("An engine that is freed lets its lock go")
    func freedEngineLetsGo() async throws {
        try await withRoot { root in
            do {
                let first = try open(root)
                #expect(first.layout.container == Self.container)
            }
            let second = try open(root)
            withExtendedLifetime(second) {}
        }
    }

    @Test("Engines of different containers on one machine do not keep each other out")
    func otherContainersOpen() async throws {
        try await withRoot { root in
            let grocery = try open(root)
            let notes = try open(root, try ContainerID("TEAM.com.example.notes"))
            withExtendedLifetime((grocery, notes)) {}
        }
    }
}
