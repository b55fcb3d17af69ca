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
            service.figure("ubiquity_chunk_bytes_in_total") >= size / 4 || !first.isRunning
        }
        let died = await first.killAndWait()
        try #require(quarter && died && first.endedBySignal, "a quarter did not go up: \(first.outputTail())")
        let storedAtKill = service.figure("ubiquity_chunk_bytes_in_total")
        #expect(storedAtKill < size, "the kill came after the whole upload, so it tests nothing")

        // The restarted engine's commit is heard through the service's push, subscribed to before it starts; each
        // message (and each reconnection, which may have missed one) is a moment to look at the item.
        let push = PushClient(
            baseURL: service.baseURL, token: try #require(observer.token), containers: [Self.container])
        let film = try ItemPath("Documents/Film.mov")
        let container = Self.container
        let waiting = Task { () -> (UbiquityProcess?, Bool) in
            var second: UbiquityProcess?
            for await event in push.events() {
                switch event {
                case .connected where second == nil:
                    second = try? UbiquityProcess(
                        arguments, environment: environment, log: logs.appendingPathComponent("2.log"))
                    if second == nil { return (nil, false) }
                case .connected, .message:
                    let items = (try? await observer.items(in: container).items) ?? []
                    if items.contains(where: { $0.path == film && $0.currentVersion != nil }) { return (second, true) }
                case .disconnected: break
                }
            }
            return (second, false)
        }
        let (restarted, committed) = await finished(waiting, within: .seconds(300))
        let second = try #require(restarted, "the engine did not start again")
        _ = await second.stop(with: SIGINT)
        #expect(committed, "the upload did not finish after the restart: \(second.outputTail())")
        #expect(service.figure("ubiquity_chunk_bytes_in_total") == size, "every chunk stored once")
        // Sent again at most: the batches on their way at the kill (four of up to 4 MiB), not what was stored.
        let received = service.figure("ubiquity_chunk_upload_bytes_total")
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
