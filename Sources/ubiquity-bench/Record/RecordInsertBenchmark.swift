import Foundation
import GRDB
import RecordStore

/// `record.insert`: 10,000 items (a string, an integer, a double, a date) inserted in a context and saved in one
/// save, against GRDB inserting the same rows in one transaction through one prepared statement. The store is
/// ubiquitous (the save's log written to the content folder) or local. Each round writes into new databases, the
/// three in a rotating order; medians of five rounds after a warm-up. Target: at most 2× GRDB.
enum RecordInsertBenchmark {
    static let name = "record.insert"
    static let count = 10_000
    static let rounds = 5
    static let warmUp = 1

    private enum Variant: Int, CaseIterable {
        case ubiquitous, local, grdb
    }

    static func run(in scratch: URL) throws {
        let values = (0..<count).map(ItemValues.init)
        var totals: [Variant: [Duration]] = [:]
        var saves: [Variant: [Duration]] = [:]
        for round in 0..<(warmUp + rounds) {
            let folder = scratch.appendingPathComponent("insert-\(round)", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            // Rotate which goes first, so that none always follows another's writeback.
            for offset in 0..<Variant.allCases.count {
                let variant = Variant(rawValue: (offset + round) % Variant.allCases.count)!
                let (total, save) = try measure(variant, values, in: folder)
                if round >= warmUp {
                    totals[variant, default: []].append(total)
                    saves[variant, default: []].append(save)
                }
            }
        }
        let baseline = RecordBench.milliseconds(Measure.median(totals[.grdb]!))
        for variant in [Variant.ubiquitous, .local] {
            let label = "\(count) items in one save, \(variant == .ubiquitous ? "ubiquitous" : "local") store"
            let total = RecordBench.milliseconds(Measure.median(totals[variant]!))
            BenchOutput.figure(bench: name, case: label, metric: "median_ms_record_insert_and_save", value: total)
            BenchOutput.figure(
                bench: name, case: label, metric: "median_ms_record_save",
                value: RecordBench.milliseconds(Measure.median(saves[variant]!)))
            BenchOutput.figure(bench: name, case: label, metric: "median_ms_grdb_one_transaction", value: baseline)
            BenchOutput.figure(bench: name, case: label, metric: "ratio_vs_grdb", value: total / baseline)
        }
    }

    /// Runs `variant` once in `folder`: the time of the inserts and the save, and of the save alone.
    private static func measure(_ variant: Variant, _ values: [ItemValues], in folder: URL) throws -> (
        Duration, Duration
    ) {
        switch variant {
        case .ubiquitous, .local:
            let place = RecordBench.place(ubiquitous: variant == .ubiquitous, in: folder)
            return try record(values, store: place.store, content: place.content)
        case .grdb:
            return try grdb(values, at: folder.appendingPathComponent("grdb.sqlite"))
        }
    }

    /// Inserts an item of each of `values` into a context of a new store and saves them in one save.
    /// - Returns: The time of the inserts and the save, and of the save alone.
    private static func record(_ values: [ItemValues], store url: URL, content: URL?) throws -> (Duration, Duration) {
        let coordinator = try RecordBench.coordinator(store: url, content: content)
        let context = RecordBench.context(coordinator)
        let clock = ContinuousClock()
        let start = clock.now
        for value in values { BenchItem.insert(value, into: context) }
        let saving = clock.now
        try context.save()
        let end = clock.now
        let saved = try RecordBench.context(coordinator).count(for: FetchRequest<BenchItem>())
        guard saved == values.count else { throw BenchError("the store holds \(saved) items, not \(values.count)") }
        return (end - start, end - saving)
    }

    /// Inserts the rows of `values` into a new GRDB database in one transaction; its time stands for both figures.
    private static func grdb(_ values: [ItemValues], at url: URL) throws -> (Duration, Duration) {
        let pool = try RecordBench.pool(at: url)
        let time = try ContinuousClock().measure {
            try pool.write { db in try ItemValues.insert(values, into: db) }
        }
        let saved = try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") ?? 0 }
        guard saved == values.count else { throw BenchError("GRDB holds \(saved) items, not \(values.count)") }
        return (time, time)
    }
}
