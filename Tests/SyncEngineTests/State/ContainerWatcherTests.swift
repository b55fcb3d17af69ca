import Foundation
import SyncEngine
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityTestSupport

/// A process that syncs many containers watches them all: the kernel's per-user limit on inotify instances (128 by
/// default) must not cap how many containers one process can watch.
@Suite("Container watchers: many in one process, each told of its own folder")
struct ContainerWatcherTests {
    /// The paths each watcher was told of.
    final class Heard: Sendable {
        private let paths = Mutex<[Int: Set<String>]>([:])
        func add(_ scope: ScanScope, to index: Int) {
            paths.withLock { paths in
                switch scope {
                case .everything: paths[index, default: []].insert("*")
                case .paths(let named): paths[index, default: []].formUnion(named)
                }
            }
        }
        func of(_ index: Int) -> Set<String> { paths.withLock { $0[index] ?? [] } }
    }

    @Test("More watchers than the kernel's default limit of inotify instances; two on one folder share its watch")
    func manyWatchers() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-watchers-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let count = 200
        let folders = (0..<count).map { root.appendingPathComponent("c\($0)", isDirectory: true) }
        for folder in folders {
            try FileManager.default.createDirectory(
                at: folder.appendingPathComponent("Documents"), withIntermediateDirectories: true)
        }
        let heard = Heard()
        var watchers = try folders.indices.map { index in
            try ContainerWatcher(folder: folders[index]) { heard.add($0, to: index) }
        }
        // A second watcher of the first folder: it shares the folder's watch with the first.
        watchers.append(try ContainerWatcher(folder: folders[0]) { heard.add($0, to: count) })
        defer { for watcher in watchers { watcher.stop() } }

        for (index, folder) in folders.enumerated() {
            try Data("item \(index)".utf8).write(to: folder.appendingPathComponent("Documents/item-\(index).txt"))
        }
        #expect(await eventually { folders.indices.allSatisfy { heard.of($0).contains("Documents/item-\($0).txt") } })
        #expect(await eventually { heard.of(count).contains("Documents/item-0.txt") })
        // Each heard only of its own folder.
        for index in folders.indices {
            #expect(heard.of(index).allSatisfy { $0 == "Documents" || $0 == "Documents/item-\(index).txt" })
        }

        // The first watcher stops; the second still hears of the folder they shared, new subfolders included.
        watchers[0].stop()
        try FileManager.default.createDirectory(
            at: folders[0].appendingPathComponent("Documents/Later"), withIntermediateDirectories: true)
        #expect(await eventually { heard.of(count).contains("Documents/Later") })
        try Data("later".utf8).write(to: folders[0].appendingPathComponent("Documents/Later/note.txt"))
        #expect(await eventually { heard.of(count).contains("Documents/Later/note.txt") })
        #expect(!heard.of(0).contains("Documents/Later/note.txt"))
    }
}
