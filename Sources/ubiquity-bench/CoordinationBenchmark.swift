import DocumentKit
import Foundation

/// `coordination`: the cost of one coordinated write and one coordinated read of a file (an empty accessor), which
/// every document save and open pays, against `stat(2)` of the same file as the floor.
enum CoordinationBenchmark {
    static let name = "coordination"

    static func run(in scratch: URL) throws {
        let url = scratch.appendingPathComponent("note.txt")
        try Data("x".utf8).write(to: url)
        let coordinator = FileCoordinator()
        var writes: [Duration] = []
        var reads: [Duration] = []
        var stats: [Duration] = []
        let clock = ContinuousClock()
        for _ in 0..<2000 {
            writes.append(try clock.measure { try coordinator.coordinate(writingItemAt: url) { _ in } })
            reads.append(try clock.measure { try coordinator.coordinate(readingItemAt: url) { _ in } })
            stats.append(clock.measure { _ = try? FileManager.default.attributesOfItem(atPath: url.path) })
        }
        for (metric, samples) in [("median_us_write", writes), ("median_us_read", reads), ("median_us_stat", stats)] {
            BenchOutput.figure(
                bench: name, case: "empty_accessor", metric: metric,
                value: Measure.microseconds(Measure.median(samples)))
        }
    }
}
