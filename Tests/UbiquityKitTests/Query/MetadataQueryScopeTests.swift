import Foundation
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@Suite("MetadataQuery scopes, predicates and order", .timeLimit(.minutes(5)))
struct MetadataQueryScopeTests {
    @Test(
        "Documents, data or both; predicates over size, name and path; results and live additions in sort order",
        arguments: EngineMode.allCases)
    func scopesPredicatesAndOrder(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let data = laptop.folder.appendingPathComponent("Library/Caches", isDirectory: true)
            try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
            let lists = laptop.documents.appendingPathComponent("Lists", isDirectory: true)
            try FileManager.default.createDirectory(at: lists, withIntermediateDirectories: true)
            try Data(count: 10).write(to: laptop.documents.appendingPathComponent("Small.txt"))
            try Data(count: 5000).write(to: laptop.documents.appendingPathComponent("Large.txt"))
            try Data(count: 300).write(to: lists.appendingPathComponent("Week.json"))
            try Data(count: 20).write(to: data.appendingPathComponent("Cache.bin"))
            let theirs = desktop.folder.appendingPathComponent("Library/Caches/Cache.bin")
            let theirWeek = desktop.documents.appendingPathComponent("Lists/Week.json")
            #expect(await eventually { (try? theirs.ubiquitousResourceValues())?.downloadingStatus == .current })
            #expect(await eventually { (try? theirWeek.ubiquitousResourceValues())?.downloadingStatus == .current })
            // The laptop sends its items side by side: each is waited for, not only the last one written.
            for name in ["Small.txt", "Large.txt"] {
                let theirs = desktop.documents.appendingPathComponent(name)
                #expect(await eventually { (try? theirs.ubiquitousResourceValues())?.downloadingStatus == .current })
            }

            let everything = MetadataQuery(ubiquity: desktop.ubiquity)
            everything.searchScopes = [.ubiquitousDocuments, .ubiquitousData]
            everything.sortDescriptors = [SortDescriptor(\.fileSize, order: .reverse)]
            let documents = MetadataQuery(ubiquity: desktop.ubiquity)
            documents.sortDescriptors = [SortDescriptor(\.fileName)]
            let dataOnly = MetadataQuery(ubiquity: desktop.ubiquity)
            dataOnly.searchScopes = [NSMetadataQueryUbiquitousDataScope]
            let big = MetadataQuery(ubiquity: desktop.ubiquity)
            big.predicate = #Predicate<MetadataItem> { $0.fileSize > 100 && $0.path.contains("/Documents/") }
            big.searchScopes = [.ubiquitousData, .ubiquitousDocuments]
            let inLists = MetadataQuery(ubiquity: desktop.ubiquity)
            inLists.predicate = #Predicate<MetadataItem> {
                $0.path.contains("/Lists/") || $0.displayName == "Small"
            }
            inLists.sortDescriptors = [SortDescriptor(\.contentType), SortDescriptor(\.fileName)]
            let queries = [everything, documents, dataOnly, big, inLists]
            for query in queries { #expect(query.start()) }
            #expect(await eventually { queries.allSatisfy { $0.isStarted && !$0.isGathering } })

            #expect(everything.results.map(\.fileName) == ["Large.txt", "Week.json", "Cache.bin", "Small.txt"])
            #expect(documents.results.map(\.fileName) == ["Large.txt", "Small.txt", "Week.json"])
            #expect(dataOnly.results.map(\.fileName) == ["Cache.bin"])
            #expect(dataOnly.results.first?.scope == .ubiquitousData)
            #expect(big.results.map(\.fileName) == ["Large.txt", "Week.json"])
            #expect(inLists.results.map(\.fileName) == ["Week.json", "Small.txt"])
            #expect(inLists.results.map(\.contentType) == ["public.json", "public.plain-text"])

            // A new file on the laptop lands in its place in every query it matches, and in no other.
            try Data(count: 1000).write(to: laptop.documents.appendingPathComponent("Medium.txt"))
            #expect(
                await eventually { everything.resultCount == 5 && documents.resultCount == 4 && big.resultCount == 3 })
            #expect(
                everything.results.map(\.fileName) == [
                    "Large.txt", "Medium.txt", "Week.json", "Cache.bin", "Small.txt",
                ])
            #expect(documents.results.map(\.fileName) == ["Large.txt", "Medium.txt", "Small.txt", "Week.json"])
            #expect(big.results.map(\.fileName) == ["Large.txt", "Week.json", "Medium.txt"])
            #expect(dataOnly.resultCount == 1)
            #expect(inLists.resultCount == 2)
            for (index, item) in everything.results.enumerated() { #expect(everything.index(ofResult: item) == index) }

            // Growing past the size limit makes an item match; changing the predicate gathers again.
            try Data(count: 200).write(to: laptop.documents.appendingPathComponent("Small.txt"))
            #expect(
                await eventually {
                    big.results.map(\.fileName) == ["Large.txt", "Week.json", "Medium.txt", "Small.txt"]
                })
            let recorder = QueryRecorder(big)
            big.predicate = #Predicate<MetadataItem> { $0.fileName.starts(with: "M") }
            #expect(await eventually { recorder.told("finish") })
            #expect(big.results.map(\.fileName) == ["Medium.txt"])
            for query in queries { query.stop() }
        }
    }
}
