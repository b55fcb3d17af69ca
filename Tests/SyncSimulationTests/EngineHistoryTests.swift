import SyncEngine
import SyncSimulation
import Testing

/// Seeded histories of 2 to 4 devices running the engine itself (``ContainerSync``: scans, planner, lanes,
/// coordinated writes, state database) against a simulated service, disks, network and clock: requests delivered
/// in any order or lost, partitions, engines killed at any wait and right after any change to their disk, apps'
/// saves landing between any two of an engine's steps. A failing history prints its seed and trace;
/// `ubiquity-bench sim --engine --seed N` replays it.
@Suite("Simulation: the engine itself in seeded histories")
struct EngineHistoryTests {
    @Test("Seeded histories of the engine converge: every device holds the service's items, nothing saved is lost")
    func historiesConverge() throws {
        var failures: [EngineHistory.Failure] = []
        var ran = 0
        for seed in UInt64(1)...EngineHistoryTests.histories {
            do {
                try EngineHistory(seed: seed).run()
                ran += 1
            } catch let failure as EngineHistory.Failure {
                failures.append(failure)
            }
        }
        #expect(
            failures.isEmpty,
            "\(failures.count) of \(ran + failures.count) histories failed; the first:\n\(failures.first?.description ?? "")"
        )
    }

    @Test("A seed replays the exact same history of the engine")
    func seedsReplay() throws {
        for seed: UInt64 in [3, 77, 5_005] {
            let first = try EngineHistory(seed: seed)
            let second = try EngineHistory(seed: seed)
            try? first.run()
            try? second.run()
            #expect(first.trace == second.trace)
            #expect(first.trace.count > 100, "a history does something")
        }
    }

    @Test("An engine whose checks see the past (a check outside the lock, then the act) loses saves, and is caught")
    func staleChecksAreCaught() throws {
        var configuration = EngineHistory.Configuration()
        configuration.staleChecks = true
        var caught: EngineHistory.Failure?
        for seed in UInt64(1)...EngineHistoryTests.histories where caught == nil {
            do {
                try EngineHistory(seed: seed, configuration: configuration).run()
            } catch let failure as EngineHistory.Failure {
                caught = failure
            }
        }
        let failure = try #require(caught, "no history caught the stale checks")
        #expect(failure.problems.contains { $0.hasPrefix("lost:") }, "\(failure)")
        // The same seed with the real checks is fine.
        #expect(throws: Never.self) { try EngineHistory(seed: failure.seed).run() }
    }

    static let histories: UInt64 = 500
}
