import Foundation
import SyncEngine
import Synchronization
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

/// A query's events, from the AsyncSequence and from the notifications, until dropped.
final class QueryRecorder {
    let streamed = QueryLog()
    let notified = QueryLog()
    private let observers: [any NSObjectProtocol]
    private let task: Task<Void, Never>

    init(_ query: MetadataQuery) {
        let updates = query.updates()
        let streamed = streamed
        // Collects the stream until the recorder is dropped.
        task = Task { for await event in updates { streamed.record(event) } }
        let notified = notified
        observers = [
            NotificationCenter.default.addObserver(
                forName: MetadataQuery.didFinishGatheringNotification, object: query, queue: nil
            ) { _ in notified.record(.didFinishGathering([])) },
            NotificationCenter.default.addObserver(
                forName: MetadataQuery.didUpdateNotification, object: query, queue: nil
            ) { note in
                let items = { (key: String) in note.userInfo?[key] as? [MetadataItem] ?? [] }
                notified.record(
                    .didUpdate(
                        added: items(NSMetadataQueryUpdateAddedItemsKey),
                        changed: items(NSMetadataQueryUpdateChangedItemsKey),
                        removed: items(NSMetadataQueryUpdateRemovedItemsKey)))
            },
        ]
    }

    deinit {
        task.cancel()
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
    }
}

/// Events as (kind, file names) pairs.
final class QueryLog: Sendable {
    let entries = Mutex<[(kind: String, names: [String])]>([])

    func record(_ event: MetadataQuery.Event) {
        let entry: (String, [String]) =
            switch event {
            case .didStartGathering: ("start", [])
            case .gatheringProgress: ("progress", [])
            case .didFinishGathering: ("finish", [])
            case .didUpdate(let added, let changed, let removed):
                (
                    "update",
                    added.map { "+\($0.fileName)" } + changed.map { "~\($0.fileName)" }
                        + removed.map { "-\($0.fileName)" }
                )
            }
        entries.withLock { $0.append(entry) }
    }

    /// Whether an event of `kind` named `name` (with its +, ~ or - mark) was recorded.
    func has(_ kind: String, _ name: String? = nil) -> Bool {
        entries.withLock { $0.contains { $0.kind == kind && (name.map($0.names.contains) ?? true) } }
    }
}

@Suite("MetadataQuery", .timeLimit(.minutes(5)))
struct MetadataQueryTests {
    @Test(
        "The grocery discovery: a query for Item_* on the desktop sees the laptop's items as placeholders, then downloaded, removed when deleted or renamed away",
        arguments: EngineMode.allCases)
    func groceryDiscovery(mode: EngineMode) async throws {
        try await withTwoDevices(mode, eagerDownloadLimit: 0) { laptop, desktop, _ in
            try Data("Milk".utf8).write(to: laptop.documents.appendingPathComponent("Item_A.txt"))
            try Data("not an item".utf8).write(to: laptop.documents.appendingPathComponent("Notes.txt"))
            let theirA = desktop.documents.appendingPathComponent("Item_A.txt")
            #expect(await eventually { (try? theirA.ubiquitousResourceValues()) != nil })

            let query = MetadataQuery(ubiquity: desktop.ubiquity)
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            query.predicate = #Predicate<MetadataItem> { $0.fileName.starts(with: "Item_") }
            query.sortDescriptors = [SortDescriptor(\.fileName)]
            let recorder = QueryRecorder(query)
            #expect(query.start())
            #expect(!query.start())
            #expect(await eventually { recorder.notified.has("finish") && recorder.streamed.has("finish") })
            #expect(query.resultCount == 1)
            let first = query.result(at: 0)
            #expect(first.value(forAttribute: NSMetadataItemFSNameKey) as? String == "Item_A.txt")
            #expect(first.downloadingStatus == .notDownloaded)
            #expect(
                first.value(forAttribute: NSMetadataUbiquitousItemDownloadingStatusKey) as? String
                    == NSMetadataUbiquitousItemDownloadingStatusNotDownloaded)
            #expect(first.url == theirA.standardizedFileURL || first.url.path == theirA.path)

            // Another item on the laptop: added live, sorted after the first.
            try Data("Eggs".utf8).write(to: laptop.documents.appendingPathComponent("Item_B.txt"))
            #expect(await eventually { recorder.notified.has("update", "+Item_B.txt") })
            #expect(await eventually { recorder.streamed.has("update", "+Item_B.txt") })
            #expect(query.results.map(\.fileName) == ["Item_A.txt", "Item_B.txt"])

            // Downloaded: changed, current.
            try await FileManager.default.startDownloadingUbiquitousItem(at: theirA)
            #expect(await eventually { query.results.first?.downloadingStatus == .current })
            #expect(recorder.notified.has("update", "~Item_A.txt"))
            #expect(query.index(ofResult: first) == 0)

            // Deleted on the laptop, or renamed so it no longer matches: removed.
            try FileManager.default.removeItem(at: laptop.documents.appendingPathComponent("Item_A.txt"))
            try FileManager.default.moveItem(
                at: laptop.documents.appendingPathComponent("Item_B.txt"),
                to: laptop.documents.appendingPathComponent("Eggs.txt"))
            #expect(await eventually(.seconds(30)) { query.resultCount == 0 })
            #expect(recorder.notified.has("update", "-Item_A.txt"))
            #expect(recorder.notified.has("update", "-Item_B.txt"))
            #expect(await eventually { recorder.streamed.has("update", "-Item_B.txt") })
            query.stop()
            #expect(query.isStopped)
        }
    }

    @Test(
        "Scopes, predicates over size and path, sort order; disabled updates are held and delivered together; stop ends them"
    )
    func scopesSortingAndHolding() async throws {
        try await withTwoDevices(.embedded) { laptop, _, _ in
            let data = laptop.folder.appendingPathComponent("Library", isDirectory: true)
            try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
            try Data(count: 10).write(to: laptop.documents.appendingPathComponent("Small.txt"))
            try Data(count: 5000).write(to: laptop.documents.appendingPathComponent("Large.txt"))
            try Data(count: 20).write(to: data.appendingPathComponent("Cache.bin"))
            #expect(
                await eventually {
                    (try? data.appendingPathComponent("Cache.bin").ubiquitousResourceValues())?.isUploaded == true
                })

            let everything = MetadataQuery(ubiquity: laptop.ubiquity)
            everything.searchScopes = [.ubiquitousDocuments, .ubiquitousData]
            everything.sortDescriptors = [SortDescriptor(\.fileSize, order: .reverse)]
            let documents = MetadataQuery(ubiquity: laptop.ubiquity)
            let dataOnly = MetadataQuery(ubiquity: laptop.ubiquity)
            dataOnly.searchScopes = [.ubiquitousData]
            let big = MetadataQuery(ubiquity: laptop.ubiquity)
            big.predicate = #Predicate<MetadataItem> { $0.fileSize > 100 && $0.path.contains("/Documents/") }
            for query in [everything, documents, dataOnly, big] { query.start() }
            #expect(await eventually { [everything, documents, dataOnly, big].allSatisfy { !$0.isGathering } })
            #expect(everything.results.map(\.fileName) == ["Large.txt", "Cache.bin", "Small.txt"])
            #expect(Set(documents.results.map(\.fileName)) == ["Large.txt", "Small.txt"])
            #expect(dataOnly.results.map(\.fileName) == ["Cache.bin"])
            #expect(big.results.map(\.fileName) == ["Large.txt"])

            // Held while disabled, then told in one update.
            let recorder = QueryRecorder(documents)
            documents.disableUpdates()
            try Data("1".utf8).write(to: laptop.documents.appendingPathComponent("One.txt"))
            try Data("2".utf8).write(to: laptop.documents.appendingPathComponent("Two.txt"))
            #expect(
                await eventually {
                    (try? laptop.documents.appendingPathComponent("Two.txt").ubiquitousResourceValues())?.isUploaded
                        == true
                })
            #expect(!recorder.notified.has("update"))
            #expect(documents.resultCount == 2)
            documents.enableUpdates()
            #expect(await eventually { documents.resultCount == 4 })
            #expect(
                recorder.notified.entries.withLock {
                    $0.contains {
                        $0.kind == "update" && $0.names.contains("+One.txt") && $0.names.contains("+Two.txt")
                    }
                })

            // Stopped: nothing more.
            documents.stop()
            let told = recorder.notified.entries.withLock { $0.count }
            try Data("3".utf8).write(to: laptop.documents.appendingPathComponent("Three.txt"))
            #expect(await eventually { everything.results.contains { $0.fileName == "Three.txt" } })
            #expect(recorder.notified.entries.withLock { $0.count } == told)
            #expect(documents.resultCount == 4)
            for query in [everything, dataOnly, big] { query.stop() }
        }
    }
}

@Suite("Query results")
struct QueryResultsTests {
    @Test("A batch adds, changes and removes results and keeps them in sort order; an unchanged item is not told")
    func batches() async throws {
        try await withTwoDevices(.embedded) { laptop, _, _ in
            for name in ["b.txt", "a.txt", "c.txt"] {
                try Data(name.utf8).write(to: laptop.documents.appendingPathComponent(name))
            }
            let query = MetadataQuery(ubiquity: laptop.ubiquity)
            query.sortDescriptors = [SortDescriptor(\.fileName, order: .reverse)]
            query.start()
            #expect(await eventually { query.resultCount == 3 })
            #expect(query.results.map(\.fileName) == ["c.txt", "b.txt", "a.txt"])
            for (index, item) in query.results.enumerated() { #expect(query.index(ofResult: item) == index) }
        }
    }
}
