import DocumentKit
import Foundation
import Logging

/// The option setting after how many saves a store writes a baseline (an `Int`; default 1,000). Logs a baseline
/// holds are removed once every device known to the content has applied them.
public let RecordStoreBaselineThresholdOption = "RecordStoreBaselineThresholdOption"

/// Baselines, and the removal of logs no device needs any more.
///
/// Each device keeps, in its folder of the content, its logs, its newest baseline (`base-<sequence>.base`) and its
/// progress (`progress`: of each device, the last log of an unbroken run from the first that it holds). A device
/// removes only its own files, and only logs that its newest baseline holds and that every other device known to
/// the content (a folder there) has said it holds: a device offline through a compaction finds every log it lacks
/// when it comes back, and a new device starts from the baselines and the logs after them.
enum Compaction {
    static let progressFileName = "progress"
    static let defaultThreshold = 1_000

    static func baselineFileName(_ sequence: UInt64) -> String {
        "base-" + RecordDatabase.logFileName(sequence).dropLast(4) + ".base"
    }

    /// The sequence a file of a device's folder is named by: a log's, or a baseline's.
    static func sequence(ofFile name: String) -> (sequence: UInt64, isBaseline: Bool)? {
        if name.hasSuffix(".log"), let sequence = UInt64(name.dropLast(4)) { return (sequence, false) }
        if name.hasPrefix("base-"), name.hasSuffix(".base"), let sequence = UInt64(name.dropFirst(5).dropLast(5)) {
            return (sequence, true)
        }
        return nil
    }

    /// Reads every other device's baseline in `folder`: the ones this store does not wholly hold are merged in the
    /// import's transaction, before the logs. A baseline that cannot be read is skipped and reported.
    static func baselines(in folder: URL, except own: String, problems: inout [String]) -> [Baseline] {
        var baselines: [Baseline] = []
        let devices = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in devices.sorted() where name != own {
            guard let device = UUID(uuidString: name) else { continue }
            let deviceFolder = folder.appendingPathComponent(name, isDirectory: true)
            let files = (try? FileManager.default.contentsOfDirectory(atPath: deviceFolder.path)) ?? []
            for file in files where sequence(ofFile: file)?.isBaseline == true {
                do {
                    let bytes = try LogImport.read(deviceFolder.appendingPathComponent(file, isDirectory: false))
                    let baseline = try Baseline(decoding: bytes)
                    guard baseline.device == device, baseline.sequence == sequence(ofFile: file)?.sequence else {
                        throw RecordStoreError(
                            .corruptLog,
                            "the baseline says it is \(baseline.sequence) of "
                                + "\(baseline.device), not its file's name")
                    }
                    baselines.append(baseline)
                } catch {
                    problems.append("\(name)/\(file) skipped: \(error)")
                }
            }
        }
        return baselines
    }

    /// What a store's passes remember of its folder between them, so that a save does not list it: the progress
    /// last written and the newest baseline (`nil` until the first pass has looked).
    struct Memory {
        var progress: [UInt8]?
        var newestBaseline: UInt64?
    }

    /// After a save or an import: writes the store's progress, a baseline when enough saves came since the last
    /// one, and removes this store's files no device needs (after a save, only when it wrote a baseline).
    ///
    /// A save changes neither what other devices hold nor what this store holds of theirs, so once a pass has written
    /// the progress and found the newest baseline, a save (whose log's sequence is `saved`) short of the next
    /// baseline has nothing to do: it neither reads the database nor touches the folder.
    static func run(
        store: PersistentStore, folder: URL, threshold: Int, memory: inout Memory, afterSave: Bool,
        saved savedSequence: UInt64? = nil
    ) throws(RecordStoreError) {
        if afterSave, let savedSequence, memory.progress != nil, let newest = memory.newestBaseline,
            savedSequence < newest + UInt64(max(threshold, 1))
        {
            return
        }
        let own = folder.appendingPathComponent(store.identifier, isDirectory: true)
        let (coverage, saved) = try store.database.read { access in
            (try access.coverage(), UInt64(try access.integerMeta("sequence")))
        }
        // Written only when it changed: each write reaches every other device, whose import it starts.
        // Of the other devices only: what this store holds of its own logs no one asks, and it moves with every save.
        let progressFile = own.appendingPathComponent(progressFileName, isDirectory: false)
        var others = coverage
        others[store.database.replica] = nil
        let progress = progress(others)
        if memory.progress != progress {
            // Forgotten until written: a pass after a save tries again rather than skipping as nothing to do.
            memory.progress = nil
            if (try? Data(contentsOf: progressFile)) != Data(progress) { try write(progress, to: progressFile) }
            memory.progress = progress
        }
        let known = memory.newestBaseline != nil
        var files: [String] = []
        func list() { files = (try? FileManager.default.contentsOfDirectory(atPath: own.path)) ?? [] }
        if !known {
            list()
            memory.newestBaseline =
                files.compactMap { sequence(ofFile: $0) }.filter(\.isBaseline).map(\.sequence).max() ?? 0
        }
        var baselineSequence = memory.newestBaseline ?? 0
        let wroteBaseline = saved >= baselineSequence + UInt64(max(threshold, 1))
        if wroteBaseline {
            let baseline = try store.database.read { access in try access.baseline() }
            try write(
                baseline.encoded(),
                to: own.appendingPathComponent(baselineFileName(baseline.sequence), isDirectory: false))
            baselineSequence = baseline.sequence
            memory.newestBaseline = baselineSequence
        }
        guard baselineSequence > 0, !afterSave || wroteBaseline || !known else { return }
        if known || wroteBaseline { list() }
        // What every other device known to the content holds of this store's logs.
        var needed = UInt64.max
        let devices = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in devices where name != store.identifier && UUID(uuidString: name) != nil {
            let file = folder.appendingPathComponent(name, isDirectory: true).appendingPathComponent(progressFileName)
            let theirs = readProgress(file)
            needed = min(needed, theirs[store.database.replica] ?? 0)
        }
        let removable = min(needed, baselineSequence)
        // Removed by path: a baseline takes a thousand logs with it, and Foundation's removal of one looks up the
        // working folder and the file's kind first. A file that cannot be removed is kept, as it was found.
        let ownPath = own.path
        for file in files {
            guard let (number, isBaseline) = sequence(ofFile: file) else { continue }
            let obsolete = isBaseline ? number < baselineSequence : number <= removable
            if obsolete { unlink(ownPath + "/" + file) }
        }
    }

    /// A progress file's text: a line `<device> <sequence>` per device.
    static func progress(_ coverage: [UUID: UInt64]) -> [UInt8] {
        let lines = coverage.sorted { $0.key.isOrdered(before: $1.key) }.map { "\($0.key.uuidString) \($0.value)\n" }
        return Array(lines.joined().utf8)
    }

    /// The largest progress file read: a line per device is far less. A larger one, or one that cannot be read,
    /// counts as holding nothing of this store's logs, which keeps them.
    static let maximumProgressSize = 1 << 20

    /// Reads another device's progress file (see ``maximumProgressSize`` and ``parseProgress(_:)``).
    static func readProgress(_ url: URL) -> [UUID: UInt64] {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return [:] }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maximumProgressSize + 1), data.count <= maximumProgressSize
        else { return [:] }
        return parseProgress(String(decoding: data, as: UTF8.self))
    }

    /// Reads a progress file; lines that are not a device and a number are ignored (a device then counts as holding
    /// nothing of the others' logs, which keeps them).
    static func parseProgress(_ text: String) -> [UUID: UInt64] {
        var coverage: [UUID: UInt64] = [:]
        for line in text.split(separator: "\n").prefix(100_000) {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let device = UUID(uuidString: String(parts[0])), let sequence = UInt64(parts[1])
            else { continue }
            coverage[device] = sequence
        }
        return coverage
    }

    private static func write(_ bytes: [UInt8], to url: URL) throws(RecordStoreError) {
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            SafeFileWriter.removeStaleTemporarySiblings(of: url)
            try SafeFileWriter.replaceItem(at: url, synchronizesContents: false) { temporary in
                try SafeFileWriter.writeFile(Data(bytes), to: temporary)
            }
        } catch {
            throw RecordStoreError(.storeFailed, "\(url.lastPathComponent) cannot be written", underlying: error)
        }
    }
}
