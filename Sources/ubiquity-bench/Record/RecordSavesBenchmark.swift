import Foundation
import GRDB
import RecordStore

/// `record.saves`: 1,000 saves of one new item each in one context, against GRDB committing 1,000 transactions of
/// one insert each in WAL mode with `synchronous = FULL`, the setting `RecordDatabase` runs with; and, beside it,
/// with `synchronous = NORMAL`, what a GRDB pool sets on its writer by default.
///
/// The store is ubiquitous or local. A ubiquitous save keeps its log in its transaction, and the log is written to
/// the content folder after the save returns, on a thread of the store's; the time until the last log is written is
/// reported beside the saves'. Each round writes into new databases, the four in a rotating order; medians of five
/// rounds after a short warm-up round. Rounds keep their files until the end: ext4 without a journal skips inodes
/// freed in the last minute or more when it makes a file, so deleting a round's thousand logs would slow the next
/// round's. Target: at most 2× GRDB.
///
/// Beside them, the floor a ubiquitous save stands on here: 1,000 files of a log's size written by hand as a save
/// writes its log (a temporary file created, written, closed and renamed into place, unflushed), whose time this
/// machine's file system alone decides (`us_per_log_file_by_hand`).
enum RecordSavesBenchmark {
    static let name = "record.saves"
    static let saves = 1_000
    static let rounds = 5
    static let warmUpSaves = 100

    private enum Variant: Int, CaseIterable {
        case ubiquitous, local, grdb, grdbNormal, files
    }

    /// About the size of the log of a save of one item.
    static let logSize = 256

    static func run(in scratch: URL) throws {
        let values = (0..<saves).map(ItemValues.init)
        var totals: [Variant: [Duration]] = [:]
        var untilWritten: [Variant: [Duration]] = [:]
        for round in 0...rounds {
            let folder = scratch.appendingPathComponent("saves-\(round)", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let batch = round == 0 ? Array(values.prefix(warmUpSaves)) : values
            // Rotate which goes first, so that none always follows another's writeback.
            for offset in 0..<Variant.allCases.count {
                let variant = Variant(rawValue: (offset + round) % Variant.allCases.count)!
                let (time, written) = try measure(variant, batch, in: folder)
                if round > 0 {
                    totals[variant, default: []].append(time)
                    untilWritten[variant, default: []].append(written)
                }
            }
        }
        let baseline = RecordBench.milliseconds(Measure.median(totals[.grdb]!))
        let normal = RecordBench.milliseconds(Measure.median(totals[.grdbNormal]!))
        let files = RecordBench.milliseconds(Measure.median(totals[.files]!))
        for variant in [Variant.ubiquitous, .local] {
            let label = "\(saves) saves of one item, \(variant == .ubiquitous ? "ubiquitous" : "local") store"
            let total = RecordBench.milliseconds(Measure.median(totals[variant]!))
            BenchOutput.figure(bench: name, case: label, metric: "median_ms_record", value: total)
            BenchOutput.figure(
                bench: name, case: label, metric: "us_per_save_record", value: total * 1000 / Double(saves))
            BenchOutput.figure(bench: name, case: label, metric: "median_ms_grdb_transactions", value: baseline)
            BenchOutput.figure(
                bench: name, case: label, metric: "us_per_transaction_grdb", value: baseline * 1000 / Double(saves))
            BenchOutput.figure(bench: name, case: label, metric: "ratio_vs_grdb", value: total / baseline)
            BenchOutput.figure(
                bench: name, case: label, metric: "median_ms_grdb_transactions_synchronous_normal", value: normal)
            BenchOutput.figure(
                bench: name, case: label, metric: "ratio_vs_grdb_synchronous_normal", value: total / normal)
            BenchOutput.figure(
                bench: name, case: label, metric: "us_per_log_file_by_hand", value: files * 1000 / Double(saves))
            if variant == .ubiquitous {
                // Saves return before their logs are written: the time until the last log was written too.
                let written = RecordBench.milliseconds(Measure.median(untilWritten[variant]!))
                BenchOutput.figure(
                    bench: name, case: label, metric: "us_per_save_until_logs_written",
                    value: written * 1000 / Double(saves))
                BenchOutput.figure(
                    bench: name, case: label, metric: "ratio_until_logs_written_vs_grdb", value: written / baseline)
                // Against what a ubiquitous save cannot do without: GRDB's transaction and a log's file.
                BenchOutput.figure(
                    bench: name, case: label, metric: "ratio_vs_grdb_and_file_by_hand",
                    value: total / (baseline + files))
            }
        }
    }

    /// Runs `variant` once in `folder`: the time of one save (or transaction) per value, and until the saves' logs
    /// were written too.
    private static func measure(_ variant: Variant, _ values: [ItemValues], in folder: URL) throws
        -> (Duration, Duration)
    {
        switch variant {
        case .ubiquitous, .local:
            let place = RecordBench.place(ubiquitous: variant == .ubiquitous, in: folder)
            return try record(values, store: place.store, content: place.content)
        case .grdb:
            let time = try grdb(values, at: folder.appendingPathComponent("grdb.sqlite"), synchronous: .full)
            return (time, time)
        case .grdbNormal:
            let time = try grdb(values, at: folder.appendingPathComponent("grdb-normal.sqlite"), synchronous: .normal)
            return (time, time)
        case .files:
            let time = try files(values.count, in: folder.appendingPathComponent("files", isDirectory: true))
            return (time, time)
        }
    }

    /// Writes `count` files of ``logSize`` bytes into `folder` as a save writes its log.
    private static func files(_ count: Int, in folder: URL) throws -> Duration {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let bytes = [UInt8](repeating: 0x5A, count: logSize)
        let path = folder.path
        return try ContinuousClock().measure {
            for index in 0..<count {
                let name = String(format: "%012d.log", index + 1)
                let temporary = "\(path)/.\(name).\(String(UInt64.random(in: 0...UInt64.max), radix: 16)).tmp"
                let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
                guard descriptor >= 0, write(descriptor, bytes, bytes.count) == bytes.count else {
                    throw BenchError("\(temporary) cannot be written")
                }
                close(descriptor)
                guard rename(temporary, "\(path)/\(name)") == 0 else { throw BenchError("\(name) cannot be renamed") }
            }
        }
    }

    /// Inserts an item of each of `values` into one context of a new store, saving after each.
    /// - Returns: The time of the saves, and until their logs were written too.
    private static func record(_ values: [ItemValues], store url: URL, content: URL?) throws -> (Duration, Duration) {
        let coordinator = try RecordBench.coordinator(store: url, content: content)
        let context = RecordBench.context(coordinator)
        let clock = ContinuousClock()
        let start = clock.now
        for value in values {
            BenchItem.insert(value, into: context)
            try context.save()
        }
        let time = clock.now - start
        // Saves return before their logs are written (on a thread of the store's): the time until the last is.
        coordinator.persistentStores[0].waitUntilLogsWritten()
        let written = clock.now - start
        let saved = try RecordBench.context(coordinator).count(for: FetchRequest<BenchItem>())
        guard saved == values.count else { throw BenchError("the store holds \(saved) items, not \(values.count)") }
        if let content {
            // The newest log, or the baseline that holds it once the store has compacted its logs.
            let logs = content.appendingPathComponent(RecordBench.contentName, isDirectory: true)
                .appendingPathComponent(coordinator.persistentStores[0].identifier, isDirectory: true)
            let newest = try FileManager.default.contentsOfDirectory(atPath: logs.path).compactMap(sequence).max()
            guard newest == values.count else {
                throw BenchError("the newest log or baseline is \(newest ?? 0), not \(values.count)")
            }
        }
        return (time, written)
    }

    /// The sequence a file of a store's folder is named by: `<sequence>.log`, or `base-<sequence>.base`.
    private static func sequence(ofFile name: String) -> Int? {
        if name.hasSuffix(".log") { return Int(name.dropLast(4)) }
        if name.hasPrefix("base-"), name.hasSuffix(".base") { return Int(name.dropFirst(5).dropLast(5)) }
        return nil
    }

    /// Inserts the rows of `values` into a new GRDB database, one transaction each.
    private static func grdb(_ values: [ItemValues], at url: URL, synchronous: RecordBench.Synchronous) throws
        -> Duration
    {
        let pool = try RecordBench.pool(at: url, synchronous: synchronous)
        let time = try ContinuousClock().measure {
            for value in values {
                try pool.write { db in try ItemValues.insert([value], into: db) }
            }
        }
        let saved = try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") ?? 0 }
        guard saved == values.count else { throw BenchError("GRDB holds \(saved) items, not \(values.count)") }
        return time
    }
}
