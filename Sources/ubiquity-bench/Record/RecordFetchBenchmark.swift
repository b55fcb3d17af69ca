import Foundation
import GRDB
import RecordStore

/// `record.fetch`: fetching the items of a store of 10,000 with `#Predicate<BenchItem> { $0.quantity > 10 }`
/// (7,250 match) in a new context, against GRDB fetching and decoding the same rows into structs with
/// `WHERE quantity > 10`. Beside the target figure: the same fetch followed by a read of every attribute of every
/// result, and a fetch of all 10,000 without a predicate. Medians of eleven rounds after two warm-up rounds, the
/// variants in a rotating order. Target: at most 1.5× GRDB.
enum RecordFetchBenchmark {
    static let name = "record.fetch"
    static let count = 10_000
    static let threshold: Int64 = 10
    static let rounds = 11
    static let warmUp = 2

    private enum Variant: Int, CaseIterable {
        case fetch, fetchAndRead, fetchAll, grdb
    }

    static func run(in scratch: URL) throws {
        let values = (0..<count).map(ItemValues.init)
        let coordinator = try RecordBench.coordinator(
            store: scratch.appendingPathComponent("fetch.sqlite"), content: nil)
        let filling = RecordBench.context(coordinator)
        for value in values { BenchItem.insert(value, into: filling) }
        try filling.save()
        let pool = try RecordBench.pool(at: scratch.appendingPathComponent("grdb.sqlite"))
        try pool.write { db in try ItemValues.insert(values, into: db) }
        let expected = ItemValues.matching(count: count, threshold: threshold)

        var samples: [Variant: [Duration]] = [:]
        for round in 0..<(warmUp + rounds) {
            for offset in 0..<Variant.allCases.count {
                let variant = Variant(rawValue: (offset + round) % Variant.allCases.count)!
                let start = ContinuousClock.now
                let found = try fetch(variant, coordinator: coordinator, pool: pool)
                let time = ContinuousClock.now - start
                let wanted = variant == .fetchAll ? count : expected
                guard found == wanted else { throw BenchError("\(variant) found \(found) items, not \(wanted)") }
                if round >= warmUp { samples[variant, default: []].append(time) }
            }
        }
        let label = "\(count) items, quantity > \(threshold) (\(expected) match), new context"
        let baseline = RecordBench.milliseconds(Measure.median(samples[.grdb]!))
        let record = RecordBench.milliseconds(Measure.median(samples[.fetch]!))
        BenchOutput.figure(bench: name, case: label, metric: "median_ms_record_fetch", value: record)
        BenchOutput.figure(
            bench: name, case: label, metric: "median_ms_record_fetch_and_read_attributes",
            value: RecordBench.milliseconds(Measure.median(samples[.fetchAndRead]!)))
        BenchOutput.figure(
            bench: name, case: label, metric: "median_ms_record_fetch_all_no_predicate",
            value: RecordBench.milliseconds(Measure.median(samples[.fetchAll]!)))
        BenchOutput.figure(bench: name, case: label, metric: "median_ms_grdb_fetch_structs", value: baseline)
        BenchOutput.figure(bench: name, case: label, metric: "ratio_vs_grdb", value: record / baseline)
    }

    /// Runs one fetch of `variant`; returns how many items it found.
    private static func fetch(_ variant: Variant, coordinator: PersistentStoreCoordinator, pool: DatabasePool) throws
        -> Int
    {
        switch variant {
        case .fetch, .fetchAndRead:
            let threshold = Self.threshold
            let context = RecordBench.context(coordinator)
            let items = try context.fetch(
                FetchRequest<BenchItem>(predicate: #Predicate { $0.quantity > threshold }))
            if variant == .fetchAndRead {
                var characters = 0
                var sum = 0.0
                for item in items {
                    characters += item.title.utf8.count
                    sum += Double(item.quantity) + item.price + item.added.timeIntervalSinceReferenceDate
                }
                guard characters > 0, sum > 0 else { throw BenchError("the items read as empty") }
            }
            return items.count
        case .fetchAll:
            return try RecordBench.context(coordinator).fetch(FetchRequest<BenchItem>()).count
        case .grdb:
            let rows = try pool.read { db in
                try ItemValues.fetchAll(
                    db, sql: "SELECT id, title, quantity, price, added FROM item WHERE quantity > ?",
                    arguments: [threshold])
            }
            return rows.count
        }
    }
}
