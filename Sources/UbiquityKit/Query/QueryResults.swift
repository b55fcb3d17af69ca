import Foundation
import UbiquityProtocol

/// A query's results in their order, and what a batch of item changes does to them — the pure part of
/// ``MetadataQuery``, tested without disks. A result enters, moves or leaves in O(log n) comparisons (plus the
/// array's move of the results after it); nothing is re-sorted after gathering.
struct QueryResults: Sendable {
    /// What a batch did to the results, each list in result order.
    struct Update: Sendable {
        /// Items that became results.
        var added: [MetadataItem] = []
        /// Results that changed (as they are now).
        var changed: [MetadataItem] = []
        /// Items that are no longer results (as they were).
        var removed: [MetadataItem] = []

        /// Whether the batch changed nothing.
        var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty }
    }

    /// The results' order.
    let sort: QuerySort
    /// The results, in order.
    private(set) var ordered: [MetadataItem] = []
    private var keys: [QuerySort.Keys] = []
    private var byID: [ItemID: QuerySort.Entry] = [:]

    /// No results yet, to be kept in `sort`'s order.
    init(sort: QuerySort = QuerySort()) { self.sort = sort }

    /// How many results there are.
    var count: Int { ordered.count }

    /// Whether an item with `id` is a result.
    func contains(_ id: ItemID) -> Bool { byID[id] != nil }

    /// The result with `id`, if any.
    func result(withID id: ItemID) -> MetadataItem? { byID[id]?.item }

    /// The ids of the results from `container`.
    func ids(inContainer container: String) -> [ItemID] {
        byID.values.lazy.filter { $0.item.containerIdentifier == container }.map(\.item.id)
    }

    /// Replaces the results with `items` (those matching the query), sorted; an id given twice keeps its last item.
    mutating func gather(_ items: [MetadataItem]) {
        gather(sorted: sort.sorted(items))
    }

    /// Replaces the results with `entries`, already in order (``QuerySort/sorted(_:)``, ``QuerySort/merged(_:)``);
    /// an id given twice keeps its last entry.
    mutating func gather(sorted entries: [QuerySort.Entry]) {
        byID = Dictionary(minimumCapacity: entries.count)
        var repeated = false
        for entry in entries where byID.updateValue(entry, forKey: entry.item.id) != nil { repeated = true }
        let kept = repeated ? entries.filter { byID[$0.item.id]?.item === $0.item } : entries
        ordered = kept.map(\.item)
        keys = kept.map(\.keys)
    }

    /// Applies a batch: for each item, what it is now when it is a result of the query, `nil` when it is gone or no
    /// longer matches. An item that is as it was is not told.
    mutating func apply(_ batch: [ItemID: MetadataItem?]) -> Update {
        var added: [QuerySort.Entry] = []
        var changed: [QuerySort.Entry] = []
        var removed: [QuerySort.Entry] = []
        for (id, now) in batch {
            let before = byID[id]
            if let before, let now, before.item.isSame(as: now) { continue }
            if let before {
                let index = position(of: before.item, before.keys)
                ordered.remove(at: index)
                keys.remove(at: index)
                byID[id] = nil
                if now == nil { removed.append(before) }
            }
            if let now {
                let nowKeys = sort.keys(of: now)
                let index = position(of: now, nowKeys)
                ordered.insert(now, at: index)
                keys.insert(nowKeys, at: index)
                let entry = QuerySort.Entry(item: now, keys: nowKeys)
                byID[id] = entry
                if before == nil { added.append(entry) } else { changed.append(entry) }
            }
        }
        let sort = sort
        let inOrder = { (entries: [QuerySort.Entry]) in entries.sorted { sort.precedes($0, $1) }.map(\.item) }
        return Update(added: inOrder(added), changed: inOrder(changed), removed: inOrder(removed))
    }

    /// The position of the result with `id`, if it is one.
    func index(of id: ItemID) -> Int? {
        guard let entry = byID[id] else { return nil }
        return position(of: entry.item, entry.keys)
    }

    /// Where `item` is, or would go, in ``ordered``: the first result that does not precede it (binary search; the
    /// order is total, so a result is found at its own position).
    private func position(of item: MetadataItem, _ itemKeys: QuerySort.Keys) -> Int {
        var low = 0
        var high = ordered.count
        while low < high {
            let middle = (low + high) / 2
            if sort.precedes(ordered[middle], keys[middle], item, itemKeys) { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
