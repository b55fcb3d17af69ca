import Foundation

/// One pass over a store's content folder: every log of another device not applied yet, read, checked and
/// applied in one transaction.
enum LogImport {
    struct Report {
        var changes = MergeChanges()
        /// What could not be read, one line each.
        var problems: [String] = []
    }

    /// The largest log file read; a bigger one is refused as corrupt.
    static let maximumLogSize = 256 << 20

    static func run(store: PersistentStore, folder: URL) throws(RecordStoreError) -> Report {
        var report = Report()
        var logs: [(TransactionLog, [UInt8])] = []
        let own = store.identifier
        let devices = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let database = store.database
        // Logs of a newer model kept before an upgrade: applied now if this model is new enough.
        for bytes in try database.read({ try $0.pendingLogs() }) {
            if let log = try? TransactionLog(decoding: bytes) { logs.append((log, bytes)) }
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
                let url = deviceFolder.appendingPathComponent(file)
                do {
                    let bytes = try read(url)
                    let log = try TransactionLog(decoding: bytes)
                    guard log.device == device, log.sequence == sequence else {
                        throw RecordStoreError(
                            .corruptLog, "the log says it is \(log.sequence) of \(log.device), not its file's name")
                    }
                    logs.append((log, bytes))
                } catch {
                    report.problems.append("\(name)/\(file) skipped: \(error)")
                }
            }
        }
        let baselines = Compaction.baselines(in: folder, except: own, problems: &report.problems)
        guard !logs.isEmpty || !baselines.isEmpty else { return report }
        logs.sort { ($0.0.stamp, $0.0.sequence) < ($1.0.stamp, $1.0.sequence) }
        try database.write { access in
            // Baselines first: the logs they hold are then skipped.
            for baseline in baselines {
                do {
                    guard let changes = try access.importBaseline(baseline) else { continue }
                    report.changes.inserted.formUnion(changes.inserted)
                    report.changes.updated.formUnion(changes.updated)
                    report.changes.deleted.formUnion(changes.deleted)
                } catch let error as RecordStoreError where error.code == .corruptLog {
                    report.problems.append("the baseline of \(baseline.device) skipped: \(error)")
                }
            }
            for (log, bytes) in logs {
                do {
                    guard let changes = try access.importLog(log, bytes: bytes) else { continue }
                    report.changes.inserted.formUnion(changes.inserted)
                    report.changes.updated.formUnion(changes.updated)
                    report.changes.deleted.formUnion(changes.deleted)
                    // An object inserted by one log and deleted by a later one was never seen.
                    let gone = report.changes.inserted.intersection(changes.deleted)
                    report.changes.inserted.subtract(gone)
                    report.changes.deleted.subtract(gone)
                    report.changes.deleted.subtract(changes.inserted)
                } catch let error as RecordStoreError where error.code == .corruptLog {
                    report.problems.append("log \(log.sequence) of \(log.device) skipped: \(error)")
                }
            }
        }
        return report
    }

    static func read(_ url: URL) throws -> [UInt8] {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        let data = try handle.read(upToCount: maximumLogSize + 1) ?? Data()
        guard data.count <= maximumLogSize else {
            throw RecordStoreError(.corruptLog, "a log of more than \(maximumLogSize) bytes")
        }
        return Array(data)
    }
}
