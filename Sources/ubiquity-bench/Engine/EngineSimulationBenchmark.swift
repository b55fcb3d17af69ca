import Foundation
import SyncSimulation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `sim.engine`: seeded histories of the engine itself (``EngineHistory``: several devices, each running
/// `ContainerSync` against a simulated service, disks, network and clock), as many as `--histories` asks from
/// `--seed` on; prints histories per second. A failing history prints its seed, what broke and its trace to standard
/// error, and the run fails; `--seed N --histories 1 --trace` replays one history and prints its trace.
/// `--unchecked-removal` runs the engine with checks that see what the last scan saw, to see the simulation catch it.
///
/// A history's order of events depends on the order the engine walks its dictionaries in, which Swift varies from
/// process to process unless `SWIFT_DETERMINISTIC_HASHING` is set; so the command starts itself again with it set,
/// and a seed replays the same history in every run of the same build (a debug and a release build schedule the
/// engine's tasks differently).
enum EngineSimulationBenchmark {
    static let name = "sim.engine"

    static func run(histories: Int, seed: UInt64, trace: Bool, staleChecks: Bool = false) throws {
        if getenv("SWIFT_DETERMINISTIC_HASHING") == nil {
            setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
            let arguments = CommandLine.arguments.map { strdup($0) } + [nil]
            execv("/proc/self/exe", arguments)
            throw BenchError("could not start again with deterministic hashing: \(String(cString: strerror(errno)))")
        }
        var configuration = EngineHistory.Configuration()
        configuration.staleChecks = staleChecks
        let start = ContinuousClock.now
        var failures: [EngineHistory.Failure] = []
        for offset in 0..<UInt64(histories) {
            let history = try EngineHistory(seed: seed &+ offset, configuration: configuration)
            do {
                try history.run()
            } catch let failure as EngineHistory.Failure {
                failures.append(failure)
            }
            if trace {
                try? FileHandle.standardOutput.write(contentsOf: Data(history.trace.map { $0 + "\n" }.joined().utf8))
            }
        }
        let seconds = Measure.microseconds(ContinuousClock.now - start) / 1_000_000
        BenchOutput.figure(
            bench: name, case: "\(histories) histories", metric: "histories_per_second",
            value: Double(histories) / seconds)
        BenchOutput.figure(bench: name, case: "\(histories) histories", metric: "failed", value: Double(failures.count))
        if let first = failures.first {
            FileHandle.standardError.write(Data((first.description + "\n").utf8))
            for failure in failures {
                let problems = failure.problems.joined(separator: "\n    ")
                FileHandle.standardError.write(Data("seed \(failure.seed):\n    \(problems)\n".utf8))
            }
            throw BenchError("\(failures.count) of \(histories) histories failed; the first is above")
        }
    }
}
