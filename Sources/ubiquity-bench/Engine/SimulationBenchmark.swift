import Foundation
import SyncSimulation

/// `sim`: seeded histories of the deterministic simulation (several devices running the engine's planner against a
/// simulated service, disks, network and clock), as many as `--histories` asks from `--seed` on; prints histories
/// per second. A failing history prints its seed, what broke and its trace to standard error, and the run fails;
/// `--seed N --histories 1 --trace` replays one history and prints its trace. `--unchecked-removal` runs the old
/// engine's remote delete (a check, then a removal that does not check again), to see the simulation catch it.
enum SimulationBenchmark {
    static let name = "sim"

    static func run(histories: Int, seed: UInt64, trace: Bool, uncheckedRemoval: Bool = false) throws {
        var configuration = SimulatedHistory.Configuration()
        configuration.uncheckedLocalRemoval = uncheckedRemoval
        let start = ContinuousClock.now
        var failures: [SimulatedHistory.Failure] = []
        for offset in 0..<UInt64(histories) {
            var history = SimulatedHistory(seed: seed &+ offset, configuration: configuration)
            do {
                try history.run()
            } catch let failure as SimulatedHistory.Failure {
                failures.append(failure)
            }
            if trace { for line in history.trace { print(line) } }
        }
        let seconds = Measure.microseconds(ContinuousClock.now - start) / 1_000_000
        BenchOutput.figure(
            bench: name, case: "\(histories) histories", metric: "histories_per_second",
            value: Double(histories) / seconds)
        BenchOutput.figure(bench: name, case: "\(histories) histories", metric: "failed", value: Double(failures.count))
        if let first = failures.first {
            FileHandle.standardError.write(Data((first.description + "\n").utf8))
            throw BenchError("\(failures.count) of \(histories) histories failed; the first is above")
        }
    }
}
