import Foundation
import Logging
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

/// The service is a real `ubiquity server` process, killed with SIGKILL while the engine uploads a large file to it.
@Suite("Failure: the sync service killed with SIGKILL mid-upload")
struct ServiceKillTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")
    static let bigPath = try! ItemPath("Documents/Big.bin")
    static let offlinePath = try! ItemPath("Documents/Offline.txt")

    @Test(
        "Service killed mid-upload: after its restart the upload completes without starting over, a change made while it was down goes up too, and the other device gets identical bytes"
    )
    func uploadResumesAfterServiceKill() async throws {
        let seed = SeededRandom.runSeed()
        print("ServiceKillTests: seed \(seed)")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubq-upload-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let (data, logs) = (home.appendingPathComponent("service"), home.appendingPathComponent("logs"))
        try await ServiceProcess.addUser("ada", password: "correct horse", data: data, logs: logs)
        var service = try await ServiceProcess.start(data: data, log: logs.appendingPathComponent("service-1.log"))
        do {
            try await uploadAcrossKill(seed: seed, home: home, service: &service)
        } catch {
            await service.process.killAndWait()
            throw error
        }
        await service.process.killAndWait()
    }

    private func uploadAcrossKill(seed: UInt64, home: URL, service: inout ServiceProcess) async throws {
        var logger = Logger(label: "ubiquity.failure.upload")
        logger.logLevel = .critical
        let login = try await signIn(service, device: "laptop")
        let laptop = try device("laptop", client: login, home: home, logger: logger)
        let desktop = try device(
            "desktop", client: try await signIn(service, device: "desktop"), home: home, logger: logger)

        // 48 MiB made and hashed byte by byte in a debug build: seconds of work, kept off the shared threads.
        let (big, bigHash) = try await offPool {
            var random = SeededRandom(seed: seed)
            let big = random.bytes(48 << 20)
            return (big, try contentHash(big))
        }
        let offline = Data("written while the service was down".utf8)
        let bigURL = laptop.layout.url(of: Self.bigPath)
        try await offPool { try big.write(to: bigURL) }

        var engine = ContainerEngine(sync: laptop, pushToken: login.token, logger: logger)
        engine.maximumBackoff = .seconds(2)
        // The engine runs until the test cancels it.
        let running = Task { [engine] in try await engine.run() }
        defer { running.cancel() }

        // Some chunks have arrived, and not all: kill the service.
        let bytesIn = "ubiquity_chunk_bytes_in_total"
        let current = service
        let started = try await eventually(within: .seconds(60), every: .milliseconds(5)) {
            try await current.metric(bytesIn) >= Double(big.count / 3)
        }
        try #require(started, "the upload did not start: \(current.process.outputTail())")
        let before = try await service.metric(bytesIn)
        let died = await service.process.killAndWait()
        #expect(died && service.process.endedBySignal, "the service did not die of SIGKILL")
        #expect(before < Double(big.count), "the kill came after the whole file had arrived")

        // While it is down: another change, and rounds that fail. Two rounds end after the change is written; the
        // second began after the first ended, so it began with the change on disk.
        try await offPool { try offline.write(to: laptop.layout.url(of: Self.offlinePath)) }
        let rounds = RoundWatcher(laptop.events())
        for _ in 1...2 {
            let failure = try await rounds.next()
            #expect(failure != nil, "a round succeeded while the service was down")
        }
        service = try await ServiceProcess.start(
            data: service.data, port: service.port, log: home.appendingPathComponent("logs/service-2.log"))

        let restarted = service
        let observer = login
        let uploaded = try await eventually(within: .seconds(60), every: .milliseconds(100)) {
            // The observer's pooled connections went to the killed service: a failed look is "not yet".
            guard let files = try? await ServiceSnapshot.take(observer, Self.container).currentFiles else {
                return false
            }
            return try files[Self.bigPath] == bigHash && files[Self.offlinePath] == contentHash(offline)
        }
        try #require(uploaded, "the upload did not complete after the restart: \(restarted.process.outputTail())")
        let after = try await service.metric(bytesIn)
        // The engine sends several chunks at once: those in flight at the kill may have been received (and
        // counted) without being recorded, and come again. Sixteen of the largest chunks is far more than that.
        let inFlight = 16 * Double(FastCDC.Configuration.default.maximumSize)
        print("ServiceKillTests: \(Int(before)) of \(big.count) bytes had arrived at the kill, \(Int(after)) after it")
        #expect(after < Double(big.count), "the upload started over: \(after) bytes arrived after the restart")
        #expect(
            after <= Double(big.count) - before + inFlight,
            "chunks stored before the kill were sent again: \(before) bytes before it, \(after) after, of \(big.count)")
        running.cancel()
        _ = await running.result

        try await desktop.syncOnceAfterRestart()
        try await desktop.download(Self.bigPath)
        let copy = desktop.layout.url(of: Self.bigPath)
        let copied = try await offPool { try contentHash(try Data(contentsOf: copy)) }
        #expect(copied == bigHash, "the other device's copy differs")
        #expect(try Data(contentsOf: desktop.layout.url(of: Self.offlinePath)) == offline)
    }

    private func signIn(_ service: ServiceProcess, device: String) async throws -> ServiceClient {
        // Signed in through AsyncHTTPClient's shared client, which keeps trying to connect until the request's
        // deadline: on a loaded machine a connection to a service just started was seen to take over 5 s.
        let login = try await ServiceClient(baseURL: service.baseURL, httpClient: .shared).login(
            LoginRequest(name: "ada", password: "correct horse", deviceName: device))
        // Then a client that fails at once when the service is down, as `ubiquity sync` would see it.
        return ServiceClient(baseURL: service.baseURL, token: login.token)
    }

    private func device(_ name: String, client: ServiceClient, home: URL, logger: Logger) throws -> ContainerSync {
        try ContainerSync(
            layout: ContainerLayout(root: home.appendingPathComponent(name), container: Self.container),
            client: client, device: SavingDevice(id: DeviceID(), name: name), logger: logger)
    }
}
