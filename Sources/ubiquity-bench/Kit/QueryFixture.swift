import Foundation
import SyncEngine
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// The state `kit.query` starts from, written through the engine's state store as the engine would have left it.
enum QueryFixture {
    /// The path of item `index`: `Documents/List <index % 100>/Item_<index>.txt`.
    static func path(_ index: Int) throws -> ItemPath {
        try ItemPath("Documents/List \(index % 100)/Item_\(index).txt")
    }

    /// Records `count` placeholders: items the service has, whose content is not here.
    static func recordPlaceholders(count: Int, in layout: ContainerLayout) throws {
        try record(count: count, in: layout) { index in
            LocalItem(
                id: ItemID(), path: try path(index), kind: .file, serverVersion: VersionID(),
                size: Int64(100 + index % 900), isPlaceholder: true)
        }
    }

    /// Writes `count` small files, last modified an hour ago, and records each as downloaded and current.
    static func recordDownloadedFiles(count: Int, in layout: ContainerLayout) throws {
        let anHourAgo = timeval(tv_sec: time(nil) - 3600, tv_usec: 0)
        let scanner = LocalScanner()
        try record(count: count, in: layout) { index in
            let path = try path(index)
            let url = layout.url(of: path)
            if index < 100 {
                try FileManager.default.createDirectory(
                    at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            }
            try Data(repeating: UInt8(index % 251), count: 100 + index % 900).write(to: url)
            guard utimes(url.path, [anHourAgo, anHourAgo]) == 0 else { throw BenchError("utimes \(url.path)") }
            let version = VersionID()
            return LocalItem(
                id: ItemID(), path: path, kind: .file, identity: try scanner.identity(of: url, kind: .file),
                baseVersion: version, serverVersion: version, size: Int64(100 + index % 900))
        }
    }

    /// Serves `device`'s socket, and nothing else: an engine with nothing to do.
    static func serveIdle(_ device: BenchDevice) async throws -> RunningEngine {
        // The device's sync holds the container's engine lock.
        let socket = try await EngineSocketServer.bind(serving: device.sync, logger: SyncBench.logger)
        // The socket is served until the benchmark stops it by cancelling this task.
        return RunningEngine(task: Task { try await socket.run() })
    }

    private static func record(count: Int, in layout: ContainerLayout, _ item: (Int) throws -> LocalItem) throws {
        try layout.create()
        let state = try LocalStateStore(url: layout.stateDatabase)
        var batch: [LocalItem] = []
        for index in 0..<count {
            batch.append(try item(index))
            if batch.count == 10_000 {
                try state.update(saving: batch)
                batch = []
            }
        }
        try state.update(saving: batch)
    }
}
