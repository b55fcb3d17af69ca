import Foundation
import SyncEngine
import Synchronization
import UbiquityKit
import UbiquityProtocol

/// `kit.query`: a `MetadataQuery` for `Item_*` over a container whose engine knows 100,000 items.
///
/// Device A's engine runs in this process (push, no polling) and the app's UbiquityKit reaches it over its socket,
/// as an app does with `ubiquity sync`, so the instant the engine learns of a change is seen on the engine itself.
/// A's state database is filled with 100,000 placeholder records first (what a device that has heard of 100,000
/// items knows; `UBIQUITY_BENCH_ITEMS` sets another count) — made through the state store's API rather than synced,
/// which would take minutes and is measured by `sync.memory`.
///
/// - **gathering**: from `start()` to did-finish-gathering, the container already open; best of 3 queries.
/// - **update**: device B (an engine of its own) saves a new `Item_` file; from A's engine recording the item to the
///   query's did-update naming it: p50 and p99 over 100 changes.
enum QueryBenchmark {
    static let name = "kit.query"
    static let updates = 100

    static var itemCount: Int {
        ProcessInfo.processInfo.environment["UBIQUITY_BENCH_ITEMS"].flatMap { Int($0) } ?? 100_000
    }

    static func run(in scratch: URL) async throws {
        try await SyncBench.run(in: scratch) { bench in
            let deviceA = try await bench.device("A", eagerDownloadLimit: 0)
            let deviceB = try await bench.device("B")
            try fill(deviceA.sync.layout)
            let engines = [deviceA.start(), deviceB.start()]
            let ubiquity = Ubiquity(
                configuration: UbiquityConfiguration(
                    root: deviceA.sync.layout.folder.deletingLastPathComponent(), containers: [bench.container],
                    profile: DeviceProfile(
                        server: bench.server.base, account: "bench", token: deviceA.sync.client.token ?? "",
                        device: deviceA.sync.device),
                    engine: .external, logger: SyncBench.logger))
            do {
                try await measure(ubiquity, deviceA, deviceB)
            } catch {
                await ubiquity.shutdown()
                for engine in engines { await engine.stop() }
                throw error
            }
            await ubiquity.shutdown()
            for engine in engines { await engine.stop() }
        }
    }

    /// Records `itemCount` placeholders in the container's state database, in 100 folders.
    static func fill(_ layout: ContainerLayout) throws {
        let state = try LocalStateStore(url: layout.stateDatabase)
        var batch: [LocalItem] = []
        for index in 0..<itemCount {
            batch.append(
                LocalItem(
                    id: ItemID(), path: try ItemPath("Documents/List \(index % 100)/Item_\(index).txt"), kind: .file,
                    serverVersion: VersionID(), size: Int64(100 + index % 900), isPlaceholder: true))
            if batch.count == 10_000 {
                try state.update(saving: batch)
                batch = []
            }
        }
        try state.update(saving: batch)
    }

    static func measure(_ ubiquity: Ubiquity, _ deviceA: BenchDevice, _ deviceB: BenchDevice) async throws {
        let opening = ContinuousClock.now
        guard try await ubiquity.containerURL(forIdentifier: nil) != nil else { throw BenchError("not signed in") }
        figure("open_container_ms", Measure.milliseconds(.now - opening))

        var gatherings: [Duration] = []
        var query = MetadataQuery(ubiquity: ubiquity)
        for _ in 0..<3 {
            query.stop()
            query = MetadataQuery(ubiquity: ubiquity)
            query.predicate = #Predicate<MetadataItem> { $0.fileName.starts(with: "Item_") }
            let events = query.updates()
            let start = ContinuousClock.now
            query.start()
            for await event in events {
                if case .didFinishGathering = event { break }
            }
            gatherings.append(.now - start)
        }
        figure("results", Double(query.resultCount))
        figure("gathering_best_ms", Measure.milliseconds(gatherings.min() ?? .zero))
        figure("gathering_median_ms", Measure.milliseconds(Measure.median(gatherings)))
        figure("target_gathering_ms", 1000)

        // The instant A's engine records each item, by file name.
        let learned = Mutex<[String: ContinuousClock.Instant]>([:])
        let engineEvents = deviceA.sync.events()
        let watcher = Task {
            for await event in engineEvents {
                if case .itemChanged(let item) = event {
                    let now = ContinuousClock.now
                    learned.withLock { if $0[item.path.name] == nil { $0[item.path.name] = now } }
                }
            }
        }
        defer { watcher.cancel() }
        var latencies: [Duration] = []
        let updatesStream = query.updates()
        var iterator = updatesStream.makeAsyncIterator()
        for run in 0..<(updates + 5) {
            let name = "Item_new_\(run).txt"
            try deviceB.land(Data(name.utf8), as: name)
            var told: ContinuousClock.Instant?
            while told == nil, let event = await iterator.next() {
                if case .didUpdate(let added, _, _) = event, added.contains(where: { $0.fileName == name }) {
                    told = .now
                }
            }
            guard let told, let heard = learned.withLock({ $0[name] }) else {
                throw BenchError("no update for \(name)")
            }
            if run >= 5 { latencies.append(told - heard) }
            try await Task.sleep(for: .milliseconds(20))
        }
        for (percent, fraction) in [(50, 0.5), (99, 0.99)] {
            figure(
                "engine_learned_to_did_update_p\(percent)_ms",
                Measure.milliseconds(Measure.percentile(latencies, fraction)))
        }
        figure("target_update_ms", 50)
        query.stop()
    }

    static func figure(_ metric: String, _ value: Double) {
        BenchOutput.figure(
            bench: name, case: "\(itemCount) items, engine over its socket", metric: metric, value: value)
    }
}
