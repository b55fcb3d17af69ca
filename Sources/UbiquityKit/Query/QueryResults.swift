import Foundation
import UbiquityProtocol

/// A query's results and how a batch of item changes moves them — the pure part of ``MetadataQuery``, tested
/// without disks: which items are added, changed and removed, kept in sort order.
struct QueryResults: Sendable {
    /// What a batch did to the results.
    struct Update: Sendable {
        var added: [MetadataItem] = []
        var changed: [MetadataItem] = []
        var removed: [MetadataItem] = []
        var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty }
    }

    /// The order results are kept in; none: the order items arrived in.
    let sort: [SortDescriptor<MetadataItem>]
    private(set) var ordered: [MetadataItem] = []
    private var byID: [ItemID: MetadataItem] = [:]

    init(sort: [SortDescriptor<MetadataItem>]) { self.sort = sort }

    /// Replaces the results with `items` (those matching the query), sorted.
    mutating func gather(_ items: [MetadataItem]) {
        byID = Dictionary(items.map { ($0.itemID, $0) }) { _, last in last }
        ordered = sort.isEmpty ? Array(byID.values).sorted { $0.path < $1.path } : byID.values.sorted(using: sort)
    }

    /// Applies a batch: for each item, what it is now when it matches the query, `nil` when it is gone or no
    /// longer matches.
    mutating func apply(_ batch: [ItemID: MetadataItem?]) -> Update {
        var update = Update()
        var leaving = Set<ItemID>()
        var arriving: [MetadataItem] = []
        for (id, now) in batch {
            let before = byID[id]
            switch (before, now) {
            case (nil, nil): continue
            case (let before?, nil):
                update.removed.append(before)
                leaving.insert(id)
                byID[id] = nil
            case (nil, let now?):
                update.added.append(now)
                arriving.append(now)
                byID[id] = now
            case (let before?, let now?):
                guard !before.isSame(as: now) else { continue }
                update.changed.append(now)
                leaving.insert(id)
                arriving.append(now)
                byID[id] = now
            }
        }
        if !leaving.isEmpty { ordered.removeAll { leaving.contains($0.itemID) } }
        for item in arriving { ordered.insert(item, at: insertionIndex(of: item)) }
        return update
    }

    /// The position of the item with `id`, if it is a result.
    func index(of id: ItemID) -> Int? {
        guard let item = byID[id] else { return nil }
        let start = insertionIndex(of: item)
        if start < ordered.count, ordered[start].itemID == id { return start }
        return ordered.firstIndex { $0.itemID == id }
    }

    /// Where `item` goes in ``ordered`` (by the sort, else by path), found by binary search.
    private func insertionIndex(of item: MetadataItem) -> Int {
        var low = 0
        var high = ordered.count
        while low < high {
            let middle = (low + high) / 2
            if precedes(ordered[middle], item) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private func precedes(_ first: MetadataItem, _ second: MetadataItem) -> Bool {
        for descriptor in sort {
            switch descriptor.compare(first, second) {
            case .orderedAscending: return true
            case .orderedDescending: return false
            case .orderedSame: continue
            }
        }
        return sort.isEmpty ? first.path < second.path : false
    }
}
