import Foundation
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@Suite("MetadataQuery discovery", .timeLimit(.minutes(5)))
struct MetadataQueryDiscoveryTests {
    @Test(
        "The grocery discovery: the desktop's query for Item_* sees the laptop's items as placeholders, then downloaded, changed, renamed, removed",
        arguments: EngineMode.allCases)
    func groceryDiscovery(mode: EngineMode) async throws {
        try await withTwoDevices(mode, eagerDownloadLimit: 0) { laptop, desktop, _ in
            try Data("Milk".utf8).write(to: laptop.documents.appendingPathComponent("Item_A.txt"))
            try Data("not an item".utf8).write(to: laptop.documents.appendingPathComponent("Notes.txt"))
            let theirA = desktop.documents.appendingPathComponent("Item_A.txt")
            let theirNotes = desktop.documents.appendingPathComponent("Notes.txt")
            #expect(await eventually { (try? theirNotes.ubiquitousResourceValues()) != nil })
            #expect(await eventually { (try? theirA.ubiquitousResourceValues()) != nil })

            let query = MetadataQuery(ubiquity: desktop.ubiquity)
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            query.predicate = #Predicate<MetadataItem> { $0.fileName.starts(with: "Item_") }
            query.sortDescriptors = [SortDescriptor(\.fileName)]
            let recorder = QueryRecorder(query)
            #expect(!query.isStarted)
            #expect(query.start())
            #expect(!query.start())
            #expect(query.isStarted)
            #expect(await eventually { recorder.told("finish") && !query.isGathering })
            #expect(recorder.notified.withLock { $0.first?.kind } == "start")
            #expect(recorder.notified.withLock { $0.first { $0.kind == "finish" }?.added } == ["Item_A.txt"])

            // Gathered as a placeholder: known, not downloaded, no file here.
            #expect(query.resultCount == 1)
            let first = query.result(at: 0)
            #expect(first.value(forAttribute: NSMetadataItemFSNameKey) as? String == "Item_A.txt")
            #expect(first.downloadingStatus == .notDownloaded)
            #expect(
                first.value(forAttribute: NSMetadataUbiquitousItemDownloadingStatusKey) as? String
                    == NSMetadataUbiquitousItemDownloadingStatusNotDownloaded)
            #expect(first.url.path == theirA.path)
            #expect(first.contentChangeDate == nil)
            #expect(!FileManager.default.fileExists(atPath: theirA.path))

            // Another item on the laptop: added live as a placeholder, sorted after the first.
            try Data("Eggs".utf8).write(to: laptop.documents.appendingPathComponent("Item_B.txt"))
            #expect(await eventually { recorder.updated("+", "Item_B.txt") })
            #expect(query.results.map(\.fileName) == ["Item_A.txt", "Item_B.txt"])
            #expect(query.results.last?.downloadingStatus == .notDownloaded)

            // Downloaded here: changed, current, with a date from the file; the same item, at the same place.
            try await FileManager.default.startDownloadingUbiquitousItem(at: theirA)
            #expect(await eventually { query.results.first?.downloadingStatus == .current })
            #expect(recorder.updated("~", "Item_A.txt"))
            #expect(query.index(ofResult: first) == 0)
            #expect(query.results.first?.contentChangeDate != nil)
            #expect(
                query.value(ofAttribute: NSMetadataUbiquitousItemDownloadingStatusKey, forResultAt: 0) as? String
                    == NSMetadataUbiquitousItemDownloadingStatusCurrent)

            // Renamed on the laptop, still matching: a change, under its new name; renamed so that it no longer
            // matches: removed. Deleted: removed.
            let laptopB = laptop.documents.appendingPathComponent("Item_B.txt")
            try FileManager.default.moveItem(at: laptopB, to: laptop.documents.appendingPathComponent("Item_C.txt"))
            #expect(await eventually { recorder.updated("~", "Item_C.txt") })
            #expect(query.results.map(\.fileName) == ["Item_A.txt", "Item_C.txt"])
            try FileManager.default.moveItem(
                at: laptop.documents.appendingPathComponent("Item_C.txt"),
                to: laptop.documents.appendingPathComponent("Eggs.txt"))
            #expect(await eventually { recorder.updated("-", "Item_C.txt") })
            try FileManager.default.removeItem(at: laptop.documents.appendingPathComponent("Item_A.txt"))
            #expect(await eventually { recorder.updated("-", "Item_A.txt") })
            #expect(query.resultCount == 0)
            #expect(query.index(ofResult: first) == nil)

            // The stream told the same, in the same order; every notification agreed with the results.
            #expect(await eventually { recorder.streamed.withLock { $0 } == recorder.notified.withLock { $0 } })
            #expect(recorder.disagreements.withLock { $0 }.isEmpty)
            query.stop()
            #expect(query.isStopped && !query.isStarted)
        }
    }

    @Test(
        "A query started before any item exists finds items as they arrive, downloaded and uploaded",
        arguments: EngineMode.allCases)
    func startsEmpty(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let query = MetadataQuery(ubiquity: desktop.ubiquity)
            let recorder = QueryRecorder(query)
            query.start()
            #expect(await eventually { recorder.told("finish") })
            #expect(query.resultCount == 0)
            try Data("Bread".utf8).write(to: laptop.documents.appendingPathComponent("Item_Bread.txt"))
            #expect(await eventually { query.results.first?.downloadingStatus == .current })
            #expect(recorder.updated("+", "Item_Bread.txt"))
            #expect(query.results.first?.isUploaded == true)
            query.stop()
        }
    }
}
