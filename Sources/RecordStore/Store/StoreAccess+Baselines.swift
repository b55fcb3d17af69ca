import Foundation
import GRDB

extension StoreAccess {
    /// Of each device, the last log of the unbroken run from its first that baselines brought in (`rs_floor`).
    func floor() throws -> [UUID: UInt64] {
        var floor: [UUID: UInt64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT device, sequence FROM rs_floor") {
            floor[UUID(row[0] as Data)] = UInt64(bitPattern: row[1] as Int64)
        }
        return floor
    }

    /// What the store holds, as a baseline's coverage: of each other device, the last log of an unbroken run from
    /// its first that was applied (by a baseline or on its own); of this store, its last save.
    func coverage() throws -> [UUID: UInt64] {
        var coverage = try floor()
        let rows = try Row.fetchAll(db, sql: "SELECT device, sequence FROM rs_applied ORDER BY device, sequence")
        for row in rows {
            let device = UUID(row[0] as Data)
            let sequence = UInt64(bitPattern: row[1] as Int64)
            let reached = coverage[device] ?? 0
            if sequence == reached + 1 { coverage[device] = sequence }
        }
        let own = UInt64(try integerMeta("sequence"))
        if own > 0 { coverage[try replica()] = own }
        return coverage
    }

    /// Merges another device's baseline once: one this store already holds all of, or one of a newer model (kept
    /// for after the upgrade by leaving its file be), changes nothing.
    /// - Returns: What it changed as an app sees it; `nil` when it was not merged now.
    /// - Throws: ``RecordStoreError/Code/corruptLog`` for a baseline naming what the model lacks; nothing is merged.
    mutating func importBaseline(_ baseline: Baseline) throws -> MergeChanges? {
        let replica = try replica()
        guard baseline.device != replica, baseline.modelVersion <= model.version else { return nil }
        var floor = try floor()
        // This store's own logs are never below a floor: it holds its own saves already.
        floor[replica] = .max
        guard !baseline.isCovered(by: floor) else { return nil }
        var merged: MergeChanges?
        try db.inSavepoint {
            merged = try merge(baseline, model: model)
            return .commit
        }
        for (device, sequence) in baseline.coverage where device != replica && sequence > (floor[device] ?? 0) {
            try db.execute(
                sql: "INSERT OR REPLACE INTO rs_floor (device, sequence) VALUES (?, ?)",
                arguments: [device.data, Int64(bitPattern: sequence)])
            try db.execute(
                sql: "DELETE FROM rs_applied WHERE device = ? AND sequence <= ?",
                arguments: [device.data, Int64(bitPattern: sequence)])
        }
        // The clock never runs behind a stamp the store holds.
        var latest = UInt64(bitPattern: try integerMeta("clock"))
        for record in baseline.state.objects.values {
            latest = max(latest, record.existence?.stamp.time ?? 0, record.values.values.map(\.stamp.time).max() ?? 0)
        }
        for link in baseline.state.links.values { latest = max(latest, link.stamp.time) }
        var clock = HybridLogicalClock(latest: UInt64(bitPattern: try integerMeta("clock")))
        clock.observe(latest)
        try setMeta("clock", Int64(bitPattern: clock.latest))
        return merged
    }

    /// This store's baseline: every record and link, and the logs they hold.
    func baseline() throws -> Baseline {
        Baseline(
            device: try replica(), coverage: try coverage(), modelVersion: model.version, state: try replicaState())
    }
}
