import Foundation
import Logging
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A real `ubiquity sync` killed with SIGKILL in the middle of a large file's first upload (the one that goes up while
/// the file is cut): started again, it sends only what the service does not have yet.
@Suite("Failure: a large upload resumed after SIGKILL")
struct LargeUploadKillTests {
    static let container = try! ContainerID("TEAM.com.example.resume")

    /// A service figure from `/metrics`.
    static func figure(_ name: String, of service: LocalService) -> Int {
        let line = service.service.metrics.exposition().split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    @Test("Killed after a quarter of a 96 MiB upload, the engine sends at most what was in flight again")
    func resumesWithoutSendingTwice() async throws {
        let service = try await LocalService.start()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubq-resume-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let environment = [
            "XDG_CONFIG_HOME": home.appendingPathComponent("config").path,
            "XDG_DATA_HOME": home.appendingPathComponent("data").path,
        ]
        let logs = home.appendingPathComponent("logs", isDirectory: true)
        // The account (registered by the first sign-in), read by an observer and by the other device at the end.
        let observer = try await service.signIn(account: "ada", device: "observer")
        let login = try await UbiquityProcess.run(
            ["login", "--server", service.baseURL, "--account", "ada", "--device", "laptop", "--profile", "laptop"],
            environment: environment, log: logs.appendingPathComponent("login.log"), input: "correct horse\n")
        try #require(login.status == 0, "\(login.output)")
        let layout = ContainerLayout(root: home.appendingPathComponent("laptop"), container: Self.container)
        try layout.create()
        let size = 96 << 20
        let bytes: Data = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var generator = SplitMix(seed: 96)
                let words = (0..<(size / 8)).map { _ in generator.next() }
                continuation.resume(returning: words.withUnsafeBytes { Data($0) })
            }
        }
        try bytes.write(to: layout.documents.appendingPathComponent("Film.mov"))
        let arguments = [
            "sync", "--container", Self.container.string, "--profile", "laptop", "--root",
            layout.folder.deletingLastPathComponent().path,
        ]

        let first = try UbiquityProcess(arguments, environment: environment, log: logs.appendingPathComponent("1.log"))
        let quarter = await eventually(.seconds(300)) {
            Self.figure("ubiquity_chunk_bytes_in_total", of: service) >= size / 4 || !first.isRunning
        }
        let died = await first.killAndWait()
        try #require(quarter && died && first.endedBySignal, "a quarter did not go up: \(first.outputTail())")
        let storedAtKill = Self.figure("ubiquity_chunk_bytes_in_total", of: service)
        #expect(storedAtKill < size, "the kill came after the whole upload, so it tests nothing")

        let second = try UbiquityProcess(arguments, environment: environment, log: logs.appendingPathComponent("2.log"))
        var committed = false
        let deadline = ContinuousClock.now + .seconds(300)
        while !committed, second.isRunning, ContinuousClock.now < deadline {
            committed = try await observer.items(in: Self.container).items.contains {
                $0.path.string == "Documents/Film.mov" && $0.currentVersion != nil
            }
            if !committed { try await Task.sleep(for: .milliseconds(50)) }
        }
        _ = await second.stop(with: SIGINT)
        #expect(committed, "the upload did not finish after the restart: \(second.outputTail())")
        #expect(Self.figure("ubiquity_chunk_bytes_in_total", of: service) == size, "every chunk stored once")
        // Sent again at most: the batches on their way at the kill (four of up to 4 MiB), not what was stored.
        let received = Self.figure("ubiquity_chunk_upload_bytes_total", of: service)
        #expect(received <= size + (17 << 20), "\(received) bytes of uploads received for \(size)")

        let desktop = try ContainerSync(
            layout: ContainerLayout(root: home.appendingPathComponent("desktop"), container: Self.container),
            client: observer, device: SavingDevice(id: DeviceID(), name: "desktop"),
            configuration: .init(eagerDownloadLimit: 1 << 30))
        try await desktop.syncOnce()
        #expect(try Data(contentsOf: desktop.layout.documents.appendingPathComponent("Film.mov")) == bytes)
        await service.remove()
    }
}
