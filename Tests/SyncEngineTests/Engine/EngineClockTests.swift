import Foundation
import Logging
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

/// The engine's waits — polling and the backoff after a failed round — run on the clock it is given, and it hears the
/// service through the push source it is given: a test moves a manual clock, or pushes, and sees the rounds the
/// engine reports, without waiting on wall-clock time.
@Suite("The running engine on an injected clock and push source: polling, push and backoff", .timeLimit(.minutes(3)))
struct EngineClockTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    /// Two devices of one account: the laptop's engine runs on `clock` with no push (only polling brings others'
    /// changes), the desktop syncs by hand.
    private func withEngine(
        clock: ManualClock, push: (any PushSource)? = nil,
        _ body: (LocalService, ContainerSync, ContainerSync, RoundWatcher) async throws -> LocalService
    ) async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubq-clock-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        var logger = Logger(label: "ubiquity.engine.clock")
        logger.logLevel = .critical
        func sync(_ name: String) async throws -> ContainerSync {
            var client = try await service.signIn(account: "ada", device: name)
            client.timeout = .seconds(30)
            return try ContainerSync(
                layout: ContainerLayout(root: root.appendingPathComponent(name), container: Self.container),
                client: client, device: SavingDevice(id: DeviceID(), name: name), logger: logger)
        }
        let laptop = try await sync("laptop")
        let desktop = try await sync("desktop")
        let rounds = RoundWatcher(laptop.events())
        var engine = ContainerEngine(sync: laptop, pushToken: nil, push: push, clock: clock, logger: logger)
        engine.pollInterval = .seconds(60)
        engine.maximumBackoff = .seconds(1)
        // The engine runs until the test cancels it.
        let running = Task { try await engine.run() }
        var last = service
        do {
            last = try await body(service, laptop, desktop, rounds)
        } catch {
            running.cancel()
            _ = await running.result
            await last.remove()
            throw error
        }
        running.cancel()
        _ = await running.result
        await last.remove()
    }

    @Test("Another device's change arrives when the engine's clock reaches its poll, with no push")
    func pollingFollowsTheClock() async throws {
        let clock = ManualClock()
        try await withEngine(clock: clock) { service, laptop, desktop, rounds in
            #expect(try await rounds.next() == nil, "the start-up round succeeds")
            let path = try ItemPath("Documents/List.txt")
            try Data("milk".utf8).write(to: desktop.layout.url(of: path))
            try await desktop.syncOnce()
            // The engine waits for its next poll on the clock; moving the clock runs it.
            #expect(await clock.waitForSleepers(1))
            clock.advance(by: .seconds(60))
            while (try? Data(contentsOf: laptop.layout.url(of: path))) != Data("milk".utf8) {
                _ = try await rounds.next()
            }
            return service
        }
    }

    /// A push source the test feeds.
    final class ManualPush: PushSource {
        let (stream, continuation) = AsyncStream.makeStream(of: PushClient.Event.self)
        func events() -> AsyncStream<PushClient.Event> { stream }
    }

    @Test("A push the engine hears runs a round at once: another device's change arrives with the next poll far off")
    func pushRunsARound() async throws {
        let clock = ManualClock()
        let push = ManualPush()
        try await withEngine(clock: clock, push: push) { service, laptop, desktop, rounds in
            #expect(try await rounds.next() == nil, "the start-up round succeeds")
            let path = try ItemPath("Documents/Pushed.txt")
            try Data("eggs".utf8).write(to: desktop.layout.url(of: path))
            try await desktop.syncOnce()
            // The engine is idle until its poll, which this clock never reaches.
            #expect(await clock.waitForSleepers(1))
            push.continuation.yield(.message(.changed(container: Self.container, token: ChangeToken("any"))))
            while (try? Data(contentsOf: laptop.layout.url(of: path))) != Data("eggs".utf8) {
                _ = try await rounds.next()
            }
            return service
        }
    }

    @Test("A round that failed with the service down is retried after the backoff the engine's clock measures")
    func backoffFollowsTheClock() async throws {
        let clock = ManualClock()
        try await withEngine(clock: clock) { service, laptop, desktop, rounds in
            #expect(try await rounds.next() == nil, "the start-up round succeeds")
            await service.stop()
            let path = try ItemPath("Documents/Offline.txt")
            try Data("written while the service is down".utf8).write(to: laptop.layout.url(of: path))
            // The file-system event starts a round, which fails.
            while try await rounds.next() == nil {}
            let back = try await LocalService.start(in: service.directory, port: service.port)
            // Each retry waits on the clock (beside the poll): move it past the backoff until a round succeeds.
            var succeeded = false
            while !succeeded {
                try #require(await clock.waitForSleepers(2), "the engine waits on the clock to retry")
                clock.advance(by: .seconds(1))
                succeeded = try await rounds.next() == nil
            }
            try await desktop.syncOnceAfterRestart()
            #expect(
                try Data(contentsOf: desktop.layout.url(of: path)) == Data("written while the service is down".utf8))
            return back
        }
    }
}

/// The rounds an engine reports, one at a time.
final class RoundWatcher: Sendable {
    private let events: AsyncStream<SyncEvent>

    init(_ events: AsyncStream<SyncEvent>) { self.events = events }

    /// The next round's end: `nil` when it succeeded, else why it failed.
    /// - Throws: When no round ends within 60 s (a guard against hanging, not a timing).
    func next() async throws -> String? {
        try await withThrowingTaskGroup(of: String??.self) { group in
            let events = self.events
            group.addTask {
                for await event in events {
                    if case .roundEnded(let failure) = event { return .some(failure) }
                }
                return nil
            }
            group.addTask {
                // Not a wait for the round: the bound after which a missing round fails the test instead of hanging it.
                try await Task.sleep(for: .seconds(60))
                return nil
            }
            guard let first = try await group.next(), let ended = first else {
                group.cancelAll()
                throw RoundWatcherTimeout()
            }
            group.cancelAll()
            return ended
        }
    }

    struct RoundWatcherTimeout: Error {}
}
