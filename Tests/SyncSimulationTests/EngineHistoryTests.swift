import Foundation
import SyncEngine
import SyncSimulation
import Testing
import UbiquityTestSupport

/// Seeded histories of 2 to 4 devices running the engine itself (``ContainerSync``: scans, planner, lanes,
/// coordinated writes, state database) against a simulated service, disks, network and clock: requests delivered
/// in any order or lost, partitions, engines killed at any wait and right after any change to their disk, apps'
/// saves, downloads and evictions landing between any two of an engine's steps. A failing history prints its seed
/// and trace; `ubiquity-bench sim.engine --seed N --histories 1 --trace` replays it.
@Suite("Simulation: the engine itself in seeded histories", .serialized)
struct EngineHistoryTests {
    /// Histories per slice. The suite's tests run one at a time: side by side, four slices and the stale-check run
    /// kept both cores busy through the suite's first minutes, and other suites' requests ran out of their deadlines.
    /// Each runs on a thread of its own at normal priority (`offPool`, not niced): the engine's state databases are
    /// SQLite's, whose allocator takes a lock every thread in the process shares.
    static let slice: UInt64 = 100

    @Test(
        "Seeded histories of the engine converge: every device holds the service's items, nothing saved is lost",
        arguments: 0..<4)
    func historiesConverge(slice: Int) async throws {
        let first = UInt64(slice) * Self.slice + 1
        let failures = try await offPool {
            var failures: [EngineHistory.Failure] = []
            for seed in first..<first + Self.slice {
                do {
                    try EngineHistory(seed: seed).run()
                } catch let failure as EngineHistory.Failure {
                    failures.append(failure)
                }
            }
            return failures
        }
        #expect(
            failures.isEmpty,
            "\(failures.count) of \(Self.slice) histories failed (seeds \(failures.map(\.seed))); the first:\n\(failures.first?.description ?? "")"
        )
    }

    @Test("A seed replays the exact same history of the engine, run after run")
    func seedsReplay() async throws {
        // The engine walks dictionaries, whose order Swift varies between processes unless told not to; the bench
        // command sees to that, so each run is a process of its own, as a replay is.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-replay-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        for seed in ["3", "5005"] {
            var traces: [[Substring]] = []
            for run in 0..<2 {
                let (status, output) = try await UbiquityProcess.run(
                    ["sim.engine", "--seed", seed, "--histories", "1", "--trace"], program: "ubiquity-bench",
                    log: folder.appendingPathComponent("\(seed)-\(run).log"), timeout: 300)
                #expect(status == 0, "\(output.suffix(2_000))")
                traces.append(output.split(separator: "\n").filter { $0.hasPrefix("[") })
            }
            #expect(traces[0] == traces[1])
            #expect(traces[0].count > 100, "a history does something")
        }
    }

    @Test("An engine whose checks see the past (a check outside the lock, then the act) loses saves, and is caught")
    func staleChecksAreCaught() async throws {
        let caught = try await offPool {
            var configuration = EngineHistory.Configuration()
            configuration.staleChecks = true
            for seed in UInt64(1)...200 {
                do {
                    try EngineHistory(seed: seed, configuration: configuration).run()
                } catch let failure as EngineHistory.Failure {
                    return failure as EngineHistory.Failure?
                }
            }
            return nil
        }
        let failure = try #require(caught, "no history caught the stale checks")
        #expect(failure.problems.contains { $0.hasPrefix("lost:") }, "\(failure)")
        // The same seed with the real checks is fine.
        let fixed = try await offPool { () -> String? in
            do {
                try EngineHistory(seed: failure.seed).run()
                return nil
            } catch {
                return String(describing: error)
            }
        }
        #expect(fixed == nil, "\(fixed ?? "")")
    }
}
