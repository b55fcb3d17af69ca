import Foundation
import RecordStore
import SyncEngine

/// `record.latency`: from a save on device A to device B's coordinator reporting that it imported the save, both
/// devices' engines running (inotify up, push down) against the service on loopback, as `sync.latency` runs them.
///
/// Each device has a ubiquitous SQLite store as an app opens one: its file outside the container (in the
/// benchmark's scratch folder), its logs under the container's `record_data/`, which the device's engine syncs like
/// any file. A run inserts one item in a private-queue context on A and saves it; it ends when B's coordinator
/// yields an import naming the item's id (``PersistentStoreCoordinator/importedChanges()``, the async form of
/// ``PersistentStoreCoordinator/didImportUbiquitousContentChangesNotification``). p50, p90, p99 over 100 runs,
/// split where the save returned (A's log in its folder), at the instants the service counted A's first commit (the
/// log's record) and last (its content), and where the log appeared in B's container (B's engine placed it; what
/// follows is B's presenter hearing of it and the import). The commits and B's copy are looked at every
/// millisecond while the run waits for the import. Target: p50 ≤ 50 ms, p99 ≤ 250 ms.
enum RecordLatencyBenchmark {
    static let name = "record.latency"
    static let warmup = 5
    static let runs = 100
    /// The pause after each run, so both engines finish the rounds the save caused (B's import writes its progress
    /// file, which goes back to A).
    static let settle = Duration.milliseconds(100)
    /// How long a run waits for B's import before the benchmark fails.
    static let limit = Duration.seconds(60)
    /// The folder of the stores' logs in each device's container (Core Data's ubiquitous content URL).
    static let contentFolderName = "record_data"

    static func run(in scratch: URL) async throws {
        try await SyncBench.run(in: scratch) { bench in
            let deviceA = try await bench.device("A")
            let deviceB = try await bench.device("B")
            let source = try coordinator(of: deviceA, store: scratch.appendingPathComponent("A.sqlite"))
            let target = try coordinator(of: deviceB, store: scratch.appendingPathComponent("B.sqlite"))
            let engines = [deviceA.start(), deviceB.start()]
            do {
                try await saves(bench, from: source, to: target)
            } catch {
                for engine in engines { await engine.stop() }
                throw error
            }
            for engine in engines { await engine.stop() }
        }
    }

    /// A coordinator with a ubiquitous store at `store`, its logs under `device`'s `record_data/`.
    static func coordinator(of device: BenchDevice, store: URL) throws -> PersistentStoreCoordinator {
        try RecordBench.coordinator(
            store: store,
            content: device.sync.layout.folder.appendingPathComponent(contentFolderName, isDirectory: true))
    }

    /// The runs: one item inserted and saved on A each, timed until B's import names it; checks that B holds them all.
    static func saves(
        _ bench: SyncBench, from source: PersistentStoreCoordinator, to target: PersistentStoreCoordinator
    ) async throws {
        let context = RecordBench.context(source)
        var totals: [Duration] = []
        var saveCalls: [Duration] = []
        var records: [Duration] = []
        var uploads: [Duration] = []
        var placings: [Duration] = []
        var imports: [Duration] = []
        for run in 0..<(warmup + runs) {
            // Subscribed before the save, so that no import goes by unseen.
            let imported = target.importedChanges()
            let commitsBefore = bench.commits
            let save = try await context.perform { () throws -> Save in
                let item = BenchItem.insert(ItemValues(run), into: context)
                let started = ContinuousClock.now
                try context.save()
                return Save(id: item.objectID, started: started, returned: .now)
            }
            let watch = RunWatch(
                commits: CommitWatch(bench, commits: commitsBefore, landed: save.started),
                copy: try copyOfNewestLog(from: source, in: target))
            let arrival = try await arrival(of: save.id, in: imported, watching: watch)
            let total = arrival.instant - save.started
            if run >= warmup {
                let content = arrival.watch.commits.last ?? total
                let placed = arrival.watch.placed ?? total
                totals.append(total)
                saveCalls.append(save.returned - save.started)
                records.append(arrival.watch.commits.first ?? total)
                uploads.append(content)
                placings.append(placed - content)
                imports.append(total - placed)
            }
            try await Task.sleep(for: settle)
        }
        let held = try RecordBench.context(target).count(for: FetchRequest<BenchItem>())
        guard held == warmup + runs else { throw BenchError("B holds \(held) items, not \(warmup + runs)") }
        let label = "one item inserted and saved on A to B's did-import naming it, \(runs) runs"
        report(label, "save_to_did_import", totals)
        report(label, "save_call", saveCalls)
        report(label, "save_to_first_commit", records)
        report(label, "save_to_last_commit", uploads)
        report(label, "last_commit_to_placed_in_B", placings)
        report(label, "placed_in_B_to_did_import", imports)
        BenchOutput.figure(bench: name, case: label, metric: "target_p50_ms", value: 50)
        BenchOutput.figure(bench: name, case: label, metric: "target_p99_ms", value: 250)
    }

    /// One save on A: the inserted item's id, when `save()` was called and when it returned.
    struct Save: Sendable {
        var id: ManagedObjectID
        var started: ContinuousClock.Instant
        var returned: ContinuousClock.Instant
    }

    /// Where the log of A's latest save will appear in B's container: the same path under B's content folder.
    static func copyOfNewestLog(
        from source: PersistentStoreCoordinator, in target: PersistentStoreCoordinator
    ) throws -> URL {
        let store = source.persistentStores[0]
        guard let content = store.ubiquitousContentFolder,
            let targetContent = target.persistentStores[0].ubiquitousContentFolder
        else { throw BenchError("the stores are not ubiquitous") }
        // The save wrote its log after it returned.
        store.waitUntilLogsWritten()
        let folder = content.appendingPathComponent(store.identifier, isDirectory: true)
        // Log names are zero-padded sequence numbers: the newest sorts last.
        guard
            let newest = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                .filter({ $0.hasSuffix(".log") }).max()
        else { throw BenchError("A's save wrote no log to \(folder.path)") }
        return targetContent.appendingPathComponent(store.identifier, isDirectory: true)
            .appendingPathComponent(newest)
    }

    /// What a run watches while it waits for B's import: the service's commits, and when A's log appeared in B's
    /// container.
    struct RunWatch: Sendable {
        var commits: CommitWatch
        /// Where B's engine puts its copy of A's log.
        let copy: URL
        /// From the save's call to the first look that found B's copy.
        private(set) var placed: Duration?

        init(commits: CommitWatch, copy: URL) {
            self.commits = commits
            self.copy = copy
        }

        /// Looks at the commits and at B's copy now.
        mutating func check() {
            commits.check()
            if placed == nil, FileManager.default.fileExists(atPath: copy.path) {
                placed = .now - commits.landed
            }
        }
    }

    /// What a run's two tasks end with.
    private enum Outcome: Sendable {
        /// B's coordinator yielded the import naming the item, at this instant.
        case imported(ContinuousClock.Instant)
        /// What was watched until the import came.
        case watched(RunWatch)
    }

    /// Waits for the import on `imports` naming `id` while `watch` looks every millisecond.
    /// - Returns: The instant the import was yielded, and what was watched until then.
    /// - Throws: ``BenchError`` when no such import comes within ``limit``.
    static func arrival(
        of id: ManagedObjectID, in imports: AsyncStream<ObjectIDChanges>, watching watch: RunWatch
    ) async throws -> (instant: ContinuousClock.Instant, watch: RunWatch) {
        try await withThrowingTaskGroup(of: Outcome.self) { group in
            group.addTask {
                for await changes in imports where changes.inserted.contains(id) { return .imported(.now) }
                throw BenchError("B's imports ended before one named the item")
            }
            group.addTask {
                var watch = watch
                let deadline = ContinuousClock.now + limit
                while !Task.isCancelled {
                    watch.check()
                    guard ContinuousClock.now < deadline else {
                        throw BenchError("no import on B named the item within \(limit)")
                    }
                    try? await Task.sleep(for: .milliseconds(1))
                }
                watch.check()
                return .watched(watch)
            }
            var instant: ContinuousClock.Instant?
            var watched: RunWatch?
            for try await outcome in group {
                switch outcome {
                case .imported(let arrival):
                    instant = arrival
                    group.cancelAll()
                case .watched(let watch):
                    watched = watch
                }
            }
            guard let instant, let watched else { throw BenchError("a run ended without its import") }
            return (instant, watched)
        }
    }

    /// p50, p90 and p99 of `samples`, in milliseconds.
    static func report(_ label: String, _ metric: String, _ samples: [Duration]) {
        BenchOutput.percentiles(bench: name, case: label, metric: metric, samples)
    }
}
