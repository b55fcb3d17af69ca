import Foundation
import SyncEngine
import UbiquityProtocol

/// `sync.planner`: the planner's time to plan a container of 100,000 items in step (what a full scan hands it):
/// best and median of 7 plans. Target: at most 200 ms.
enum PlannerBenchmark {
    static let name = "sync.planner"
    static let count = 100_000

    static func run() {
        var items: [ItemObservation] = []
        items.reserveCapacity(count)
        for index in 0..<count {
            let path = try! ItemPath("Documents/folder-\(index % 100)/item-\(index).txt")
            var identity = LocalFileIdentity(
                device: 1, inode: UInt64(index + 1), size: 1_000, modified: 1_700_000_000_000_000_000,
                changed: 1_700_000_000_000_000_000)
            identity.capturedAt = identity.modified + 60_000_000_000
            let version = VersionID()
            let hash = try! ChunkHash(String(format: "%064x", index))
            items.append(
                ItemObservation(
                    id: ItemID(),
                    remote: RemoteView(path: path, kind: .file, version: version, contentHash: hash, size: 1_000),
                    local: LocalView(path: path, kind: .file, identity: identity, contentHash: hash),
                    synced: SyncedView(
                        path: path, kind: .file, version: version, contentHash: hash, size: 1_000, identity: identity)))
        }
        let planner = SyncPlanner()
        var samples: [Duration] = []
        for _ in 0..<7 {
            let start = ContinuousClock.now
            let plan = planner.plan(items)
            samples.append(ContinuousClock.now - start)
            precondition(plan.isEmpty, "an in-step container planned \(plan.count) operations")
        }
        let label = "\(count) items in step"
        BenchOutput.figure(
            bench: name, case: label, metric: "best_ms", value: Measure.microseconds(samples.min()!) / 1000)
        BenchOutput.figure(
            bench: name, case: label, metric: "median_ms", value: Measure.microseconds(Measure.median(samples)) / 1000)
    }
}
