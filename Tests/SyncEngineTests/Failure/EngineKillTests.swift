import Foundation
import Testing

/// The engine is a real `ubiquity sync` process killed with SIGKILL at random moments while files are saved into
/// its folder and another device commits edits it downloads; after every restart it must carry on, and in the end
/// nothing saved on either device is lost and both folders show the service's current versions.
@Suite("Failure: the sync engine killed with SIGKILL")
struct EngineKillTests {
    @Test(
        "Engine killed with SIGKILL during a stream of local edits and remote downloads, repeatedly: after restart both devices converge with every saved content kept"
    )
    func killedEngineLosesNothing() async throws {
        let seed = SeededRandom.runSeed()
        print("EngineKillTests: seed \(seed) (UBIQUITY_TEST_SEED=\(seed) repeats the run's choices)")
        let run = try await EngineKillRun.start(seed: seed)
        do {
            try await run.run()
        } catch {
            await run.tearDown()
            throw error
        }
        await run.tearDown()
    }
}
