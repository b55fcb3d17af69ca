import Foundation
import SyncEngine
import Synchronization
import UbiquityKit

/// The update half of `kit.query`: device B saves a new `Item_` file, A's engine records it, A's query tells of it.
enum QueryUpdateLatency {
    static let changes = 100
    static let warmUp = 5

    /// Instants by file name, recorded where they happen.
    final class Instants: Sendable {
        let byName = Mutex<[String: ContinuousClock.Instant]>([:])
        func record(_ name: String) {
            let now = ContinuousClock.now
            byName.withLock { if $0[name] == nil { $0[name] = now } }
        }
        subscript(name: String) -> ContinuousClock.Instant? { byName.withLock { $0[name] } }
    }

    static func measure(_ ubiquity: Ubiquity, engine deviceA: BenchDevice, saver deviceB: BenchDevice) async throws {
        let query = MetadataQuery(ubiquity: ubiquity)
        query.predicate = #Predicate<MetadataItem> { $0.fileName.starts(with: "Item_") }
        let updates = query.updates()
        // The instant A's engine records each item (its events, as a listener in this process sees them).
        let learned = Instants()
        let engineEvents = deviceA.sync.events()
        let watcher = Task {
            for await event in engineEvents {
                if case .itemChanged(let item) = event { learned.record(item.path.name) }
            }
        }
        defer { watcher.cancel() }
        // The instant each did-update is posted (observers run where it is posted).
        let told = Instants()
        let observer = NotificationCenter.default.addObserver(
            forName: NSMetadataQueryDidUpdate, object: query, queue: nil
        ) { note in
            for item in note.userInfo?[NSMetadataQueryUpdateAddedItemsKey] as? [MetadataItem] ?? [] {
                told.record(item.fileName)
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }

        query.start()
        var iterator = updates.makeAsyncIterator()
        while let event = await iterator.next() {
            if case .didFinishGathering = event { break }
        }
        var saveToLearned: [Duration] = []
        var saveToTold: [Duration] = []
        var learnedToTold: [Duration] = []
        var watcherLate = 0
        for run in 0..<(changes + warmUp) {
            let name = "Item_new_\(run).txt"
            let saved = try deviceB.land(Data(name.utf8), as: name)
            var seen = false
            while !seen, let event = await iterator.next() {
                if case .didUpdate(let added, _, _) = event { seen = added.contains { $0.fileName == name } }
            }
            guard seen, let toldAt = told[name] else { throw BenchError("the query never told of \(name)") }
            guard let learnedAt = await waitedFor(name, in: learned) else {
                throw BenchError("A's engine never recorded \(name)")
            }
            if run >= warmUp {
                saveToLearned.append(learnedAt - saved)
                saveToTold.append(toldAt - saved)
                if learnedAt > toldAt { watcherLate += 1 }
                learnedToTold.append(max(.zero, toldAt - learnedAt))
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        query.stop()

        for (percent, fraction) in [(50, 0.5), (99, 0.99)] {
            for (metric, samples) in [
                ("save_to_engine_learned", saveToLearned), ("save_to_did_update", saveToTold),
                ("engine_learned_to_did_update", learnedToTold),
            ] {
                figure("\(metric)_p\(percent)_ms", Measure.milliseconds(Measure.percentile(samples, fraction)))
            }
        }
        // Changes the engine's listener saw only after the did-update was posted (counted as 0 ms above).
        figure("engine_listener_late_count", Double(watcherLate))
        figure("target_update_ms", 50)
    }

    /// The instant of `name` in `instants`, once it is there (the engine's listener may run after the query).
    private static func waitedFor(_ name: String, in instants: Instants) async -> ContinuousClock.Instant? {
        for _ in 0..<500 {
            if let instant = instants[name] { return instant }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return nil
    }

    static func figure(_ metric: String, _ value: Double) {
        BenchOutput.figure(
            bench: QueryBenchmark.name, case: "\(QueryBenchmark.itemCount) placeholders, engine over its socket",
            metric: metric, value: value)
    }
}
