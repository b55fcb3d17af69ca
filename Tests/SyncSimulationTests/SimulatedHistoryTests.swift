import SyncEngine
import SyncSimulation
import Testing
import UbiquityTestSupport

/// Thousands of seeded histories of 2 to 4 devices running the real planner against a simulated world: partitions,
/// crashes between an operation's effect and its record, operations completing in any order, same-tick edits. A
/// failing history prints its seed and trace; `ubiquity-bench sim --seed N` replays it.
@Suite("Simulation: seeded histories of several devices", .ownThread(.background))
struct SimulatedHistoryTests {
    @Test("2,000 seeded histories converge: every device holds the service's items, nothing saved is lost")
    func historiesConverge() async throws {
        // Seconds of computation: in the background, not on one of the threads every other test shares.
        let failures = try await inBackground {
            var failures: [SimulatedHistory.Failure] = []
            for seed in UInt64(1)...2_000 {
                var history = SimulatedHistory(seed: seed)
                do {
                    try history.run()
                } catch let failure as SimulatedHistory.Failure {
                    failures.append(failure)
                }
            }
            return failures
        }
        #expect(
            failures.isEmpty, "\(failures.count) histories failed; the first:\n\(failures.first?.description ?? "")")
    }

    @Test("A seed replays the exact same history")
    func seedsReplay() throws {
        for seed: UInt64 in [7, 4_242, 90_001] {
            var first = SimulatedHistory(seed: seed)
            var second = SimulatedHistory(seed: seed)
            try? first.run()
            try? second.run()
            #expect(first.trace == second.trace)
            #expect(first.trace.count > 50, "a history does something")
        }
    }

    @Test("A removal that does not check the local copy again (the old remote delete) loses saves, and is caught")
    func uncheckedRemovalIsCaught() throws {
        var configuration = SimulatedHistory.Configuration()
        configuration.uncheckedLocalRemoval = true
        var caught: SimulatedHistory.Failure?
        for seed in UInt64(1)...2_000 where caught == nil {
            var history = SimulatedHistory(seed: seed, configuration: configuration)
            do {
                try history.run()
            } catch let failure as SimulatedHistory.Failure {
                caught = failure
            }
        }
        let failure = try #require(caught, "no history caught the unchecked removal")
        #expect(failure.problems.contains { $0.hasPrefix("lost:") }, "\(failure)")
        // The same seed with the real rule is fine.
        var fixed = SimulatedHistory(seed: failure.seed)
        #expect(throws: Never.self) { try fixed.run() }
    }
}
