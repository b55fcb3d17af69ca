import Foundation
import Logging
import SyncEngine
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One run of the engine-kill test: the laptop is `ubiquity sync` as a child process (signed in with
/// `ubiquity login`), the desktop an in-process ``ContainerSync``, both against a ``LocalService``.
final class EngineKillRun: Sendable {
    static let container = try! ContainerID("TEAM.com.example.grocery")
    static let kills = 50
    static let laptopName = "laptop"
    static let desktopName = "desktop"

    let seed: UInt64
    let service: LocalService
    let home: URL
    /// The laptop's container folder (its engine is the child process).
    let laptop: ContainerLayout
    /// The desktop, syncing in this process.
    let desktop: ContainerSync
    /// A client of the account, to look at what the service holds.
    let observer: ServiceClient
    let ledger = Mutex(SaveLedger())
    private let engine = Mutex<UbiquityProcess?>(nil)
    private let starts = Mutex(0)
    private let killCount = Mutex(0)
    /// Set when the save streams are to end.
    let streamsStopped = Atomic<Bool>(false)
    /// The longest each kind of step took, to tell where a slow run spent its time.
    let longest = Mutex<[String: Duration]>([:])

    private init(seed: UInt64, service: LocalService, home: URL, desktop: ContainerSync, observer: ServiceClient) {
        self.seed = seed
        self.service = service
        self.home = home
        self.laptop = ContainerLayout(root: home.appendingPathComponent(Self.laptopName), container: Self.container)
        self.desktop = desktop
        self.observer = observer
    }

    /// Starts the service, makes the desktop, and signs the laptop in with `ubiquity login`.
    static func start(seed: UInt64) async throws -> EngineKillRun {
        let service = try await LocalService.start()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubq-kill-\(UUID().uuidString.prefix(8))", isDirectory: true)
        do {
            let client = try await service.signIn(account: "ada", device: desktopName)
            var logger = Logger(label: "ubiquity.failure.desktop")
            logger.logLevel = .critical
            let desktop = try ContainerSync(
                layout: ContainerLayout(root: home.appendingPathComponent(desktopName), container: container),
                client: client, device: SavingDevice(id: DeviceID(), name: desktopName), logger: logger)
            let run = EngineKillRun(seed: seed, service: service, home: home, desktop: desktop, observer: client)
            let login = try await UbiquityProcess.run(
                [
                    "login", "--server", service.baseURL, "--account", "ada", "--device", laptopName, "--profile",
                    laptopName,
                ], environment: run.environment, log: run.logs.appendingPathComponent("login.log"),
                input: "correct horse\n")
            guard login.status == 0 else { throw ChildProcessFailure("ubiquity login failed: \(login.output)") }
            return run
        } catch {
            await service.remove()
            try? FileManager.default.removeItem(at: home)
            throw error
        }
    }

    /// Where the children's logs go.
    var logs: URL { home.appendingPathComponent("logs", isDirectory: true) }

    /// The laptop's environment: its own configuration (the profile) and data folders.
    var environment: [String: String] {
        [
            "XDG_CONFIG_HOME": home.appendingPathComponent("config").path,
            "XDG_DATA_HOME": home.appendingPathComponent("data").path,
        ]
    }

    /// How many times the laptop's engine has been killed so far.
    var kills: Int { killCount.withLock { $0 } }

    /// The whole run: first items, the streams with the kills, saves while the engine is dead, convergence, checks.
    func run() async throws {
        var random = SeededRandom(seed: seed)
        let laptopRandom = random.split()
        let desktopRandom = random.split()
        try await makeFirstItems()
        try startEngine()
        try await timed("phase: first sync") { try await waitForFirstSync() }
        let streams = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.saveOnLaptop(random: laptopRandom) }
            group.addTask { try await self.editOnDesktop(random: desktopRandom) }
            for kill in 1...Self.kills {
                // Some kills come soon after a restart (the first round's scan and catching up), some later.
                let pause = Bool.random(using: &random) ? 30...250 : 150...700
                try await Task.sleep(for: .milliseconds(Int.random(in: pause, using: &random)))
                if Bool.random(using: &random) {
                    // Half the kills land just after a save on either device: while the engine reads, uploads,
                    // commits, downloads or records it.
                    try await waitForNextSave()
                    try await Task.sleep(for: .milliseconds(Int.random(in: 0...40, using: &random)))
                }
                await timed("kill") { await killEngine(kill) }
                if kill == Self.kills { break }
                // The engine stays dead for a random while (saves go on meanwhile): the schedule is the test's point.
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...250, using: &random)))
                try startEngine()
            }
            streamsStopped.store(true, ordering: .sequentiallyConsistent)
            try await timed("phase: streams ending") { try await group.waitForAll() }
        }
        record("phase: streams", ContinuousClock.now - streams)
        // The engine is dead: what is saved now is found by the next engine's first scan.
        try await saveWhileDead(random: &random)
        try startEngine()
        let converged = try await timed("phase: convergence") { try await converge() }
        try await timed("phase: stop") { try await stopEngine() }
        try await check(converged: converged)
    }

    /// Kills the engine and the service, and removes every file of the run.
    func tearDown() async {
        if let child = engine.withLock({ $0.take() }) { await child.killAndWait() }
        await service.remove()
        try? FileManager.default.removeItem(at: home)
    }

    /// Runs `body`, keeping the longest time a step named `name` took.
    func timed<T>(_ name: String, _ body: () async throws -> T) async rethrows -> T {
        let start = ContinuousClock.now
        defer { record(name, ContinuousClock.now - start) }
        return try await body()
    }

    private func record(_ name: String, _ duration: Duration) {
        longest.withLock { $0[name] = max($0[name] ?? .zero, duration) }
    }

    // MARK: The laptop's engine

    /// Starts `ubiquity sync` for the laptop.
    func startEngine() throws {
        let number = starts.withLock {
            $0 += 1
            return $0
        }
        let child = try UbiquityProcess(
            [
                "sync", "--container", Self.container.string, "--profile", Self.laptopName, "--root",
                laptop.folder.deletingLastPathComponent().path,
            ], environment: environment, log: logs.appendingPathComponent("laptop-\(number).log"))
        engine.withLock { $0 = child }
    }

    /// Waits (at most 3 s) until either device saves something more.
    private func waitForNextSave() async throws {
        let count = ledger.withLock { $0.saves.count }
        _ = try await eventually(within: .seconds(3), every: .milliseconds(2)) {
            self.ledger.withLock { $0.saves.count } > count
        }
    }

    /// Kills the running engine with SIGKILL.
    private func killEngine(_ number: Int) async {
        guard let child = engine.withLock({ $0.take() }) else { return }
        #expect(child.isRunning, "the engine ended by itself before kill \(number): \(child.outputTail())")
        let died = await child.killAndWait()
        #expect(died && child.endedBySignal, "kill \(number): the engine did not die of SIGKILL")
        killCount.withLock { $0 = number }
    }

    /// Stops the engine the way Ctrl-C does; it leaves nothing half-done in `.ubiquity/tmp`, and a last
    /// `ubiquity sync --once` finds nothing more to do.
    private func stopEngine() async throws {
        guard let child = engine.withLock({ $0.take() }) else { return }
        #expect(child.isRunning, "the engine ended by itself: \(child.outputTail())")
        let ended = await child.stop(with: SIGINT)
        #expect(ended && !child.endedBySignal && child.terminationStatus == 0, "\(child.outputTail())")
        // Both folders are in step: nothing in `.ubiquity/tmp` is of use any more (not even a partial download).
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: laptop.temporary.path)) ?? []
        if !leftovers.isEmpty {
            let snapshot = try await ServiceSnapshot.take(observer, Self.container)
            let described = leftovers.map { snapshot.describeTemporaryFile($0) }.joined(separator: "; ")
            Issue.record(
                "seed \(seed): .ubiquity/tmp holds what nothing will use after the engine stopped: \(described)")
        }
        let once = try await UbiquityProcess.run(
            [
                "sync", "--once", "--container", Self.container.string, "--profile", Self.laptopName, "--root",
                laptop.folder.deletingLastPathComponent().path,
            ], environment: environment, log: logs.appendingPathComponent("laptop-once.log"))
        #expect(once.status == 0, "ubiquity sync --once: \(once.output)")
    }

    /// The tail of the latest engine log, for failure messages.
    var engineLogTail: String {
        let number = starts.withLock { $0 }
        let log = logs.appendingPathComponent("laptop-\(number).log")
        return String(((try? String(decoding: Data(contentsOf: log), as: UTF8.self)) ?? "").suffix(3_000))
    }
}
