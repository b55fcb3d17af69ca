import Foundation
import RecordStore

/// `record.memory`: the resident memory of device B's process (``RecordImportProcess``) while it imports 100,000
/// and then 1,000,000 property changes (10,000 and 100,000 readings of ten properties, saved by A 1,000 to a log):
/// the peak sampled every 10 ms during the import against the resident set just before it, and the growth of the
/// larger import against the smaller's. Flat memory grows far less than the tenfold changes. An import still
/// running after `UBIQUITY_BENCH_IMPORT_LIMIT` seconds (default 900) is stopped there and its peak so far printed.
enum RecordMemoryBenchmark {
    static let name = "record.memory"
    static let perSave = 1_000
    static let cases = [10_000, 100_000]

    /// How long an import may take (`UBIQUITY_BENCH_IMPORT_LIMIT`, seconds; default 15 minutes).
    static var limit: Duration {
        .seconds(ProcessInfo.processInfo.environment["UBIQUITY_BENCH_IMPORT_LIMIT"].flatMap { Int($0) } ?? 900)
    }

    static func run(in scratch: URL) async throws {
        var growths: [Double] = []
        for readings in cases {
            let folder = scratch.appendingPathComponent("memory-\(readings)", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let content = folder.appendingPathComponent("content", isDirectory: true)
            let writing = try ContinuousClock().measure {
                try RecordImportBenchmark.writeLogs(
                    readings: readings, perSave: perSave, content: content,
                    store: folder.appendingPathComponent("a.sqlite"))
            }
            let changes = readings * RecordBenchModel.readingProperties
            let label = "\(changes) changes (\(readings) readings x 10 properties, \(readings / perSave) logs)"
            func figure(_ metric: String, _ value: Double) {
                BenchOutput.figure(bench: name, case: label, metric: metric, value: value)
            }
            figure("device_a_saves_s", Measure.seconds(writing))
            let outcome = try await RecordImportProcess.run(
                RecordImportBenchmark.specification(content: content, in: folder), limit: limit)
            guard let report = outcome.result ?? outcome.lastSample else {
                throw BenchError("the importing process reported nothing")
            }
            if let result = outcome.result {
                guard result.readings == readings else {
                    throw BenchError("B holds \(result.readings ?? 0) readings after the import, not \(readings)")
                }
                figure("import_s", result.elapsedSeconds)
                figure("changes_per_s", Double(changes) / result.elapsedSeconds)
            } else {
                figure("import_unfinished_at_s", report.elapsedSeconds)
                FileHandle.standardError.write(
                    Data("record.memory: the import of \(changes) changes did not finish within \(limit)\n".utf8))
            }
            figure("resident_before_MiB", report.beforeMiB)
            figure("peak_sampled_MiB", report.peakMiB)
            figure("growth_MiB", report.peakMiB - report.beforeMiB)
            if let after = report.afterMiB { figure("resident_after_MiB", after) }
            if let before = report.highWaterBeforeMiB, let after = report.highWaterAfterMiB {
                figure("VmHWM_before_MiB", before)
                figure("VmHWM_after_MiB", after)
            }
            growths.append(report.peakMiB - report.beforeMiB)
        }
        BenchOutput.figure(
            bench: name, case: "1000000 vs 100000 changes", metric: "growth_ratio",
            value: growths[1] / max(growths[0], 0.001))
    }
}
