import Foundation
import SyncEngine
import Testing
import UbiquityProtocol

@testable import UbiquityKit

@Suite("Query results")
struct QueryResultsTests {
    typealias F = QueryFixtures

    @Test("Gathered results are in path order by default; ties in the sort go by path")
    func gatheringOrder() {
        var results = QueryResults()
        results.gather(["Documents/c.txt", "Documents/a.txt", "Documents/b/z.txt"].map { F.item($0) })
        #expect(results.ordered.map(\.fileName) == ["a.txt", "z.txt", "c.txt"])

        var bySize = QueryResults(sort: QuerySort([SortDescriptor(\.fileSize)]))
        bySize.gather([F.item("Documents/b", size: 5), F.item("Documents/a", size: 5), F.item("Documents/c", size: 1)])
        #expect(bySize.ordered.map(\.fileName) == ["c", "a", "b"])
    }

    @Test("A batch adds, changes and removes; lists come in result order; an unchanged item is not told")
    func batches() {
        var results = QueryResults(sort: QuerySort([SortDescriptor(\.fileName)]))
        let (a, b, c) = (ItemID(), ItemID(), ItemID())
        results.gather([F.item("Documents/b", id: b), F.item("Documents/a", id: a)])

        let update = results.apply([
            c: F.item("Documents/c", id: c),
            a: nil,
            b: F.item("Documents/b", id: b, size: 9),
        ])
        #expect(update.added.map(\.fileName) == ["c"])
        #expect(update.changed.map(\.fileSize) == [9])
        #expect(update.removed.map(\.fileName) == ["a"])
        #expect(results.ordered.map(\.fileName) == ["b", "c"])

        // The same state again, and an unknown item leaving: nothing to tell.
        let again = results.apply([b: F.item("Documents/b", id: b, size: 9), ItemID(): nil])
        #expect(again.isEmpty)
        #expect(results.index(of: c) == 1)
        #expect(results.index(of: a) == nil)
    }

    @Test("A result whose sort value changes moves to its new place; a rename is a change, not a removal")
    func moves() {
        var results = QueryResults(sort: QuerySort([SortDescriptor(\.fileSize, order: .reverse)]))
        let ids = (0..<5).map { _ in ItemID() }
        results.gather(
            ids.enumerated().map { F.item("Documents/\($0.offset)", id: $0.element, size: Int64($0.offset)) })
        #expect(results.ordered.map(\.fileName) == ["4", "3", "2", "1", "0"])
        let update = results.apply([ids[0]: F.item("Documents/renamed", id: ids[0], size: 10)])
        #expect(update.changed.map(\.fileName) == ["renamed"])
        #expect(update.added.isEmpty && update.removed.isEmpty)
        #expect(results.ordered.map(\.fileName) == ["renamed", "4", "3", "2", "1"])
        for (index, item) in results.ordered.enumerated() { #expect(results.index(of: item.id) == index) }
    }

    @Test(
        "The order agrees with Foundation's SortDescriptor for strings, integers, optional doubles, reverse orders, several descriptors and a string comparator",
        arguments: [
            [SortDescriptor(\MetadataItem.fileName)],
            [SortDescriptor(\MetadataItem.fileSize, order: .reverse), SortDescriptor(\MetadataItem.displayName)],
            [SortDescriptor(\MetadataItem.percentDownloaded)],
            [SortDescriptor(\MetadataItem.percentDownloaded, order: .reverse), SortDescriptor(\MetadataItem.path)],
            [SortDescriptor(\MetadataItem.contentType), SortDescriptor(\MetadataItem.fileSize)],
            [SortDescriptor(\MetadataItem.fileName, comparator: .lexical)],
        ])
    func agreesWithFoundation(descriptors: [SortDescriptor<MetadataItem>]) {
        var generator = SeededGenerator(seed: 7)
        let items = (0..<400).map { index in
            let name = ["Item_", "item_", "Äpfel ", "Zebra ", "b"].randomElement(using: &generator)!
            let ext = ["txt", "json", "png"].randomElement(using: &generator)!
            let transfer =
                Bool.random(using: &generator)
                ? ItemTransfer(direction: .download, completed: Int64.random(in: 0...10, using: &generator), total: 10)
                : nil
            return F.item(
                "Documents/\(name)\(index % 37).\(ext)", size: Int64.random(in: 0...20, using: &generator),
                transfer: transfer)
        }
        var results = QueryResults(sort: QuerySort(descriptors))
        results.gather(items)
        #expect(Set(results.ordered.map(\.id)) == Set(items.map(\.id)))
        for (first, second) in zip(results.ordered, results.ordered.dropFirst()) {
            #expect(Self.compare(first, second, descriptors) != .orderedDescending, "\(first) before \(second)")
        }
    }

    @Test("Chunks sorted apart and merged are in the order one sort gives; an id given twice is one result")
    func mergedChunks() {
        var generator = SeededGenerator(seed: 3)
        let sort = QuerySort([SortDescriptor(\.fileSize, order: .reverse)])
        let items = (0..<1000).map {
            F.item("Documents/\($0)", size: Int64.random(in: 0..<50, using: &generator))
        }
        let chunks = stride(from: 0, to: items.count, by: 130).map { Array(items[$0..<min($0 + 130, items.count)]) }
        let merged = sort.merged(chunks.map { sort.sorted($0) })
        #expect(merged.map(\.item.id) == sort.sorted(items).map(\.item.id))
        #expect(sort.merged([]).isEmpty)

        let id = ItemID()
        var results = QueryResults(sort: sort)
        results.gather(
            sorted: sort.merged([
                sort.sorted([F.item("Documents/old", id: id)]), sort.sorted([F.item("Documents/new", id: id)]),
            ]))
        #expect(results.ordered.map(\.fileName) == ["old"])
        #expect(results.index(of: id) == 0)
    }

    @Test("Random batches leave the results as gathering the same items afresh would")
    func randomBatchesMatchGathering() {
        var generator = SeededGenerator(seed: 42)
        let sort = QuerySort([SortDescriptor(\.fileSize), SortDescriptor(\.fileName)])
        var results = QueryResults(sort: sort)
        var truth: [ItemID: MetadataItem] = [:]
        let ids = (0..<60).map { _ in ItemID() }
        for _ in 0..<200 {
            var batch: [ItemID: MetadataItem?] = [:]
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let id = ids.randomElement(using: &generator)!
                let item =
                    Bool.random(using: &generator)
                    ? F.item(
                        "Documents/\(Int.random(in: 0..<20, using: &generator))", id: id,
                        size: Int64.random(in: 0..<5, using: &generator)) : nil
                batch[id] = .some(item)
            }
            let update = results.apply(batch)
            for (id, item) in batch { truth[id] = item }
            for item in update.added + update.changed { #expect(truth[item.id] === item) }
            var fresh = QueryResults(sort: sort)
            fresh.gather(Array(truth.values))
            #expect(results.ordered.map(\.id) == fresh.ordered.map(\.id))
        }
    }

    static func compare(
        _ first: MetadataItem, _ second: MetadataItem, _ descriptors: [SortDescriptor<MetadataItem>]
    ) -> ComparisonResult {
        for descriptor in descriptors {
            let order = descriptor.compare(first, second)
            if order != .orderedSame { return order }
        }
        return .orderedSame
    }
}

/// A repeatable random number generator (SplitMix64), so a failing case can be run again.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
