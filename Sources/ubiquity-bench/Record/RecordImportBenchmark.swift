import Foundation
import GRDB
import RecordStore

/// `record.import`: device B importing 100,000 property changes from device A's logs — 10,000 readings of ten
/// properties, inserted by A in ten saves of 1,000 — into a new store, in a process of its own
/// (``RecordImportProcess``): the time to add B's store, whose first act is `importUbiquitousContent()`, against GRDB
/// inserting the same 10,000 rows of ten columns in one transaction. Five runs, the two in alternating order;
/// medians. Target: at least 50,000 changes/s.
enum RecordImportBenchmark {
    static let name = "record.import"
    static let readings = 10_000
    static let perSave = 1_000
    static let runs = 5
    static let target = 50_000.0

    static func run(in scratch: URL) async throws {
        if let specification = RecordImportProcess.specification {
            try RecordImportProcess.serve(specification)
            return
        }
        let content = scratch.appendingPathComponent("content", isDirectory: true)
        try writeLogs(
            readings: readings, perSave: perSave, content: content, store: scratch.appendingPathComponent("a.sqlite"))
        let values = (0..<readings).map(ReadingValues.init)
        var imports: [Duration] = []
        var opens: [Duration] = []
        var baselines: [Duration] = []
        for run in 0..<runs {
            for step in run % 2 == 0 ? [0, 1] : [1, 0] {
                let folder = scratch.appendingPathComponent("run-\(run)-\(step)", isDirectory: true)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: folder) }
                if step == 0 {
                    let result = try await importInChild(content: content, in: folder, expecting: readings)
                    imports.append(.seconds(result.elapsedSeconds))
                    opens.append(.seconds(result.openSeconds ?? 0))
                } else {
                    let pool = try RecordBench.pool(at: folder.appendingPathComponent("grdb.sqlite"))
                    baselines.append(
                        try ContinuousClock().measure {
                            try pool.write { db in try ReadingValues.insert(values, into: db) }
                        })
                }
            }
        }
        let changes = readings * RecordBenchModel.readingProperties
        let label = "\(changes) changes (\(readings) readings x 10 properties, \(readings / perSave) logs)"
        let importTime = Measure.seconds(Measure.median(imports))
        let baseline = Measure.seconds(Measure.median(baselines))
        BenchOutput.figure(bench: name, case: label, metric: "median_s_add_store_with_import", value: importTime)
        BenchOutput.figure(bench: name, case: label, metric: "changes_per_s", value: Double(changes) / importTime)
        BenchOutput.figure(
            bench: name, case: label, metric: "median_ms_add_empty_store",
            value: RecordBench.milliseconds(Measure.median(opens)))
        BenchOutput.figure(bench: name, case: label, metric: "median_ms_grdb_insert_rows", value: baseline * 1000)
        BenchOutput.figure(bench: name, case: label, metric: "ratio_vs_grdb", value: importTime / baseline)
        BenchOutput.figure(bench: name, case: label, metric: "target_changes_per_s", value: target)
    }

    /// Runs B's import of `content` in a child process working in `folder`; its result, checked to hold `readings`.
    @MainActor
    static func importInChild(content: URL, in folder: URL, expecting readings: Int) async throws
        -> RecordImportProcess.Report
    {
        let limit = Duration.seconds(900)
        let outcome = try await RecordImportProcess.run(specification(content: content, in: folder), limit: limit)
        guard let result = outcome.result else { throw BenchError("the import did not finish within \(limit)") }
        guard result.readings == readings else {
            throw BenchError("B holds \(result.readings ?? 0) readings after the import, not \(readings)")
        }
        return result
    }

    /// B's store and an empty store in `folder`, importing from `content`.
    static func specification(content: URL, in folder: URL) -> RecordImportProcess.Specification {
        RecordImportProcess.Specification(
            store: folder.appendingPathComponent("b.sqlite").path, content: content.path,
            emptyStore: folder.appendingPathComponent("empty.sqlite").path,
            emptyContent: folder.appendingPathComponent("empty-content", isDirectory: true).path)
    }

    /// Device A: a ubiquitous store at `store` inserting `readings` readings of ten properties, `perSave` in each
    /// save, with its logs under `content`.
    static func writeLogs(readings: Int, perSave: Int, content: URL, store: URL) throws {
        let coordinator = try RecordBench.coordinator(store: store, content: content)
        let context = RecordBench.context(coordinator)
        for first in stride(from: 0, to: readings, by: perSave) {
            for index in first..<min(readings, first + perSave) {
                BenchReading.insert(ReadingValues(index), into: context)
            }
            try context.save()
            context.reset()
        }
        coordinator.persistentStores[0].waitUntilLogsWritten()
        let folder = content.appendingPathComponent(RecordBench.contentName, isDirectory: true)
            .appendingPathComponent(coordinator.persistentStores[0].identifier, isDirectory: true)
        let logs = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".log") }
        let saves = (readings + perSave - 1) / perSave
        guard logs.count == saves else { throw BenchError("device A wrote \(logs.count) logs for \(saves) saves") }
    }
}
