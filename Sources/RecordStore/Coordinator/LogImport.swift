import Foundation

/// One pass over a store's content folder: the logs of other devices not applied yet, read, checked and applied in
/// one transaction, in the order of their stamps, until the changed objects reach the batch's limit.
///
/// The folder's logs are filed by their headers and read whole one at a time, and a batch ends at its limit, so an
/// import of any size holds one log and one batch's object ids: a large import is several passes, each committed
/// and told on its own.
enum LogImport {
    struct Report {
        var changes = MergeChanges()
        /// What could not be read, one line each.
        var problems: [String] = []
        /// Whether logs are left for another pass: the batch reached its limit first.
        var more = false
    }

    /// The largest log file read; a bigger one is refused as corrupt.
    static let maximumLogSize = 256 << 20

    /// A log to apply: filed by its header, read whole only when its turn comes, so an import holds one log at a
    /// time however many are waiting.
    private struct Pending {
        var header: TransactionLog.Header
        /// The log's file, or its bytes when the store kept it for a newer model.
        var source: Source

        enum Source {
            case file(URL, name: String)
            case kept([UInt8])
        }

        /// Reads and checks the whole log.
        func load() throws -> (TransactionLog, [UInt8]) {
            let bytes: [UInt8]
            switch source {
            case .file(let url, _): bytes = try LogImport.read(url)
            case .kept(let kept): bytes = kept
            }
            let log = try TransactionLog(decoding: bytes)
            guard log.device == header.device, log.sequence == header.sequence, log.time == header.time else {
                throw RecordStoreError(
                    .corruptLog, "the log says it is \(log.sequence) of \(log.device), not its file's name")
            }
            return (log, bytes)
        }

        var name: String {
            switch source {
            case .file(_, let name): name
            case .kept: "log \(header.sequence) of \(header.device)"
            }
        }
    }

    /// Applies a batch: the baselines of other devices when `baselines`, then logs until `limit` objects changed.
    static func run(
        store: PersistentStore, folder: URL, baselines readBaselines: Bool = true, limit: Int = .max
    ) throws(RecordStoreError) -> Report {
        var report = Report()
        var pending: [Pending] = []
        let own = store.identifier
        let devices = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let database = store.database
        // Logs of a newer model kept before an upgrade: applied now if this model is new enough.
        for bytes in try database.read({ try $0.pendingLogs() }) {
            if let header = try? TransactionLog.header(of: bytes) {
                pending.append(Pending(header: header, source: .kept(bytes)))
            }
        }
        for name in devices.sorted() where name != own {
            guard let device = UUID(uuidString: name) else { continue }
            let deviceFolder = folder.appendingPathComponent(name, isDirectory: true)
            let files = (try? FileManager.default.contentsOfDirectory(atPath: deviceFolder.path)) ?? []
            let candidates = files.compactMap { file -> (UInt64, String)? in
                guard file.hasSuffix(".log"), let sequence = UInt64(file.dropLast(4)) else { return nil }
                return (sequence, file)
            }
            let applied = try database.read { access in
                try Set(candidates.filter { try access.hasApplied(device: device, sequence: $0.0) }.map(\.0))
            }
            for (sequence, file) in candidates where !applied.contains(sequence) {
                let url = deviceFolder.appendingPathComponent(file, isDirectory: false)
                do {
                    let header = try TransactionLog.unverifiedHeader(
                        prefix: read(url, upTo: TransactionLog.headerPrefixSize))
                    guard header.device == device, header.sequence == sequence else {
                        throw RecordStoreError(
                            .corruptLog,
                            "the log says it is \(header.sequence) of \(header.device), not its file's name")
                    }
                    pending.append(Pending(header: header, source: .file(url, name: "\(name)/\(file)")))
                } catch {
                    report.problems.append("\(name)/\(file) skipped: \(error)")
                }
            }
        }
        let baselines =
            readBaselines ? Compaction.baselines(in: folder, except: own, problems: &report.problems) : []
        guard !pending.isEmpty || !baselines.isEmpty else { return report }
        pending.sort {
            (Stamp(time: $0.header.time, device: $0.header.device), $0.header.sequence)
                < (Stamp(time: $1.header.time, device: $1.header.device), $1.header.sequence)
        }
        try database.write { access in
            // Baselines first: the logs they hold are then skipped.
            for baseline in baselines {
                do {
                    guard let changes = try access.importBaseline(baseline) else { continue }
                    report.changes.append(changes)
                } catch let error as RecordStoreError where error.code == .corruptLog {
                    report.problems.append("the baseline of \(baseline.device) skipped: \(error)")
                }
            }
            for entry in pending {
                guard report.changes.count < limit else {
                    report.more = true
                    break
                }
                let log: TransactionLog
                let bytes: [UInt8]
                do {
                    (log, bytes) = try entry.load()
                } catch {
                    report.problems.append("\(entry.name) skipped: \(error)")
                    continue
                }
                do {
                    guard let changes = try access.importLog(log, bytes: bytes) else { continue }
                    report.changes.append(changes)
                } catch let error as RecordStoreError where error.code == .corruptLog {
                    report.problems.append("log \(log.sequence) of \(log.device) skipped: \(error)")
                }
            }
        }
        return report
    }

    /// The first `count` bytes of a file, or all of a shorter one.
    static func read(_ url: URL, upTo count: Int) throws -> [UInt8] {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        return Array(try handle.read(upToCount: count) ?? Data())
    }

    /// A whole log file; one over ``maximumLogSize`` is refused as corrupt.
    static func read(_ url: URL) throws -> [UInt8] {
        let bytes = try read(url, upTo: maximumLogSize + 1)
        guard bytes.count <= maximumLogSize else {
            throw RecordStoreError(.corruptLog, "a log of more than \(maximumLogSize) bytes")
        }
        return bytes
    }
}
