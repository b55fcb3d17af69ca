import DocumentKit
import Foundation

/// `document.save`: saving an open document over its file through ``Document`` against the same bytes written by
/// hand with write + fsync + rename + fsync of the directory (``RawSafeSave``), interleaved, median per save.
@MainActor
enum DocumentSaveBenchmark {
    nonisolated static let name = "document.save"

    private struct Case {
        var name: String
        var size: Int
        var iterations: Int
    }

    private static let cases = [
        Case(name: "4KiB", size: 4 * 1024, iterations: 200),
        Case(name: "16MiB", size: 16 * 1024 * 1024, iterations: 20),
    ]

    static func run(in scratch: URL) async throws {
        for benchCase in cases {
            try await run(benchCase, in: scratch)
        }
        let handoff = await idleHandoff()
        BenchOutput.figure(
            bench: name, case: "handoff", metric: "median_us_main_to_queue_and_back_idle", value: handoff)
    }

    private static func run(_ benchCase: Case, in scratch: URL) async throws {
        let contents = noiseBytes(count: benchCase.size, seed: UInt64(benchCase.size))
        let documentURL = scratch.appendingPathComponent("document-\(benchCase.name).dat")
        let rawURL = scratch.appendingPathComponent("raw-\(benchCase.name).dat")
        let document = BlobDocument(fileURL: documentURL, contents: contents)
        document.autosaveDelay = .seconds(86_400)  // only the measured saves
        try await document.saveDocument(to: documentURL, for: .forCreating)
        try RawSafeSave.replace(rawURL, with: contents)

        let writerURL = scratch.appendingPathComponent("writer-\(benchCase.name).dat")
        try RawSafeSave.replace(writerURL, with: contents)
        var documentTimes: [Duration] = []
        var rawTimes: [Duration] = []
        var writerTimes: [Duration] = []
        let clock = ContinuousClock()
        let warmUp = 3
        for iteration in 0..<(warmUp + benchCase.iterations) {
            // Rotate which goes first, so that none always follows another's writeback.
            let order = [0, 1, 2].map { ($0 + iteration) % 3 }
            for which in order {
                let start = clock.now
                switch which {
                case 0:
                    document.updateChangeCount(.done)
                    let start = clock.now
                    try await document.saveDocument(to: documentURL, for: .forOverwriting)
                    if iteration >= warmUp { documentTimes.append(clock.now - start) }
                    continue
                case 1:
                    try RawSafeSave.replace(rawURL, with: contents)
                default:
                    // The document's write path without the document: no coordination, no hop off the main actor.
                    try SafeFileWriter.replaceItem(at: writerURL, synchronizesContents: false) { temporary in
                        try SafeFileWriter.writeFile(contents, to: temporary)
                    }
                }
                let time = clock.now - start
                if iteration >= warmUp {
                    if which == 1 { rawTimes.append(time) } else { writerTimes.append(time) }
                }
            }
        }
        await document.close()
        let documentMedian = Measure.microseconds(Measure.median(documentTimes))
        let rawMedian = Measure.microseconds(Measure.median(rawTimes))
        BenchOutput.figure(bench: name, case: benchCase.name, metric: "median_us_document", value: documentMedian)
        BenchOutput.figure(
            bench: name, case: benchCase.name, metric: "median_us_raw_write_fsync_rename_fsyncdir", value: rawMedian)
        BenchOutput.figure(bench: name, case: benchCase.name, metric: "ratio_vs_raw", value: documentMedian / rawMedian)
        let writerMedian = Measure.microseconds(Measure.median(writerTimes))
        BenchOutput.figure(bench: name, case: benchCase.name, metric: "median_us_safe_file_writer", value: writerMedian)
    }

    /// The floor a save off the main actor pays on this machine: a round trip from the main actor to a serial
    /// queue and back, each thread having gone idle meanwhile (as they do while the disk flushes).
    static func idleHandoff() async -> Double {
        let queue = DispatchQueue(label: "ubiquity-bench.handoff")
        let clock = ContinuousClock()
        var samples: [Duration] = []
        for _ in 0..<300 {
            usleep(300)  // let both threads go idle, as during a flush
            let start = clock.now
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                queue.async { continuation.resume() }
            }
            samples.append(clock.now - start)
        }
        return Measure.microseconds(Measure.median(samples))
    }
}

/// A flat document whose model is a blob of bytes.
final class BlobDocument: Document {
    var contents: Data

    init(fileURL url: URL, contents: Data) {
        self.contents = contents
        super.init(fileURL: url)
    }

    override func contents(forType typeName: String) throws -> Any { contents }

    override func load(fromContents contents: Any, ofType typeName: String?) throws {
        self.contents = contents as? Data ?? Data()
    }
}
