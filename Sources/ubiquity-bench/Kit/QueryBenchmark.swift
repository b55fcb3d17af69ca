import Foundation
import SyncEngine
import UbiquityKit
import UbiquityProtocol

/// `kit.query`: `MetadataQuery` over a container whose engine knows 100,000 items (`UBIQUITY_BENCH_ITEMS` sets
/// another count).
///
/// The engines run in this process (push, no polling) and each app's UbiquityKit reaches its engine over the
/// engine's socket, as an app does with `ubiquity sync`, so the instant an engine learns of a change is seen on the
/// engine itself. The engines' state databases are filled through `LocalStateStore`'s API rather than synced, which
/// would take minutes for 100,000 items (`sync.memory` measures that):
///
/// - device A knows 100,000 placeholders (what a device that heard of them, and downloaded none, knows);
/// - device C has 100,000 small files, downloaded an hour ago and current (each is checked for local changes, one
///   `lstat`, when it becomes a result). Only C's socket is served — an idle engine, its start-up scan of 100,000
///   files out of the way.
///
/// Figures:
/// - **gathering**: from `start()` to did-finish-gathering, the container already open; best and median of 3, for a
///   predicate alone and with a sort by name.
/// - **update**: device B saves a new `Item_` file; A's query tells of it. From B's save to A's engine recording the
///   item (as a listener of A's engine sees it), from B's save to the did-update being posted, and from the first to
///   the second (p50 and p99 over 100 changes).
enum QueryBenchmark {
    static let name = "kit.query"

    static var itemCount: Int {
        ProcessInfo.processInfo.environment["UBIQUITY_BENCH_ITEMS"].flatMap { Int($0) } ?? 100_000
    }

    static func run(in scratch: URL) async throws {
        try await SyncBench.run(in: scratch) { bench in
            let deviceA = try await bench.device("A", eagerDownloadLimit: 0)
            let deviceB = try await bench.device("B")
            try QueryFixture.recordPlaceholders(count: itemCount, in: deviceA.sync.layout)
            var engines = [deviceA.start(), deviceB.start()]
            let appA = app(of: deviceA, in: bench)
            var apps = [appA]
            do {
                try await gatherings(appA, case: "placeholders")
                try await QueryUpdateLatency.measure(appA, engine: deviceA, saver: deviceB)
                for engine in engines { await engine.stop() }
                engines = []

                let deviceC = try await bench.device("C", eagerDownloadLimit: 0)
                try QueryFixture.recordDownloadedFiles(count: itemCount, in: deviceC.sync.layout)
                engines = [try await QueryFixture.serveIdle(deviceC)]
                let appC = app(of: deviceC, in: bench)
                apps.append(appC)
                try await gatherings(appC, case: "downloaded")
            } catch {
                for app in apps { await app.shutdown() }
                for engine in engines { await engine.stop() }
                throw error
            }
            for app in apps { await app.shutdown() }
            for engine in engines { await engine.stop() }
        }
    }

    /// The UbiquityKit of an app on `device`, reaching the device's engine over its socket.
    static func app(of device: BenchDevice, in bench: SyncBench) -> Ubiquity {
        Ubiquity(
            configuration: UbiquityConfiguration(
                root: device.sync.layout.folder.deletingLastPathComponent(), containers: [bench.container],
                profile: DeviceProfile(
                    server: bench.server.base, account: "bench", token: device.sync.client.token ?? "",
                    device: device.sync.device),
                engine: .external, logger: SyncBench.logger))
    }

    /// Opens the container, then times gathering with a predicate, and with a predicate and a sort.
    static func gatherings(_ ubiquity: Ubiquity, case label: String) async throws {
        let opening = ContinuousClock.now
        guard try await ubiquity.containerURL(forIdentifier: nil) != nil else { throw BenchError("not signed in") }
        figure(label, "open_container_ms", Measure.milliseconds(.now - opening))
        let items = #Predicate<MetadataItem> { $0.fileName.starts(with: "Item_") }
        for (variant, sort) in [("", []), ("_sorted_by_name", [SortDescriptor(\MetadataItem.fileName)])] {
            var times: [Duration] = []
            for _ in 0..<3 {
                let query = MetadataQuery(ubiquity: ubiquity)
                query.predicate = items
                query.sortDescriptors = sort
                let events = query.updates()
                let start = ContinuousClock.now
                query.start()
                for await event in events {
                    if case .didFinishGathering = event { break }
                }
                times.append(.now - start)
                guard query.resultCount == itemCount else {
                    throw BenchError("gathered \(query.resultCount) results, not \(itemCount)")
                }
                query.stop()
            }
            figure(label, "gathering\(variant)_best_ms", Measure.milliseconds(times.min() ?? .zero))
            figure(label, "gathering\(variant)_median_ms", Measure.milliseconds(Measure.median(times)))
        }
        figure(label, "target_gathering_ms", 1000)
    }

    static func figure(_ label: String, _ metric: String, _ value: Double) {
        BenchOutput.figure(
            bench: name, case: "\(itemCount) \(label), engine over its socket", metric: metric, value: value)
    }
}
