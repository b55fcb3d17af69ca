/// Values by property name, kept in the order of the names: what a change, a record or a stamp list holds of one
/// object.
///
/// An object has a handful of properties, so a search of a short sorted array answers sooner than hashing the name
/// would, and the order that logs, stamps and baselines are written in comes without sorting.
package struct PropertyMap<Value> {
    package struct Entry {
        package var key: String
        package var value: Value
    }

    private var entries: [Entry] = []

    package init() {}

    /// The map of `dictionary`'s entries.
    package init(_ dictionary: [String: Value]) {
        guard !dictionary.isEmpty else { return }
        entries = dictionary.map { Entry(key: $0.key, value: $0.value) }
        entries.sort { $0.key < $1.key }
    }

    /// Where `key` is, or where it would go.
    private func position(of key: String) -> (index: Int, found: Bool) {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            let name = entries[middle].key
            if name == key { return (middle, true) }
            if name < key { low = middle + 1 } else { high = middle }
        }
        return (low, false)
    }

    /// The value of `key`; setting `nil` removes it.
    package subscript(key: String) -> Value? {
        get {
            let (index, found) = position(of: key)
            return found ? entries[index].value : nil
        }
        set { updateValue(newValue, forKey: key) }
    }

    /// Where `key` is among the entries, in the order of their names; `nil` when the map lacks it.
    package func place(of key: String) -> Int? {
        let (index, found) = position(of: key)
        return found ? index : nil
    }

    /// The value of the entry at `place` (``place(of:)``).
    package func value(atPlace place: Int) -> Value { entries[place].value }

    /// Sets (or with `nil` removes) the value of `key`.
    /// - Returns: The value it replaced.
    @discardableResult
    package mutating func updateValue(_ value: Value?, forKey key: String) -> Value? {
        let (index, found) = position(of: key)
        let old = found ? entries[index].value : nil
        switch (found, value) {
        case (true, let value?): entries[index].value = value
        case (true, nil): entries.remove(at: index)
        case (false, let value?):
            // Appended and moved down into place: for a handful of entries, swapping beats the array's general
            // insertion (a new object's values are set in any order, each a new name).
            entries.append(Entry(key: key, value: value))
            var place = entries.count - 1
            while place > index {
                entries.swapAt(place, place - 1)
                place -= 1
            }
        case (false, nil): break
        }
        return old
    }

    /// Adds `key`, which comes after every name the map holds, with its value: building a map in order without
    /// searching it.
    package mutating func append(_ key: String, _ value: Value) {
        assert(entries.last.map { $0.key < key } ?? true, "\(key) is out of order")
        entries.append(Entry(key: key, value: value))
    }

    package var count: Int { entries.count }
    package var isEmpty: Bool { entries.isEmpty }
    /// The names, in order.
    package var keys: [String] { entries.map(\.key) }

    /// Whether the names are `names`, in the same order.
    package func keys(equal names: [String]) -> Bool {
        guard entries.count == names.count else { return false }
        for index in entries.indices where entries[index].key != names[index] { return false }
        return true
    }
    /// The values, in the order of their names.
    package var values: [Value] { entries.map(\.value) }

    package mutating func reserveCapacity(_ capacity: Int) { entries.reserveCapacity(capacity) }

    /// The same names with each value transformed.
    package func mapValues<T>(_ transform: (Value) throws -> T) rethrows -> PropertyMap<T> {
        var map = PropertyMap<T>()
        map.entries = try entries.map { .init(key: $0.key, value: try transform($0.value)) }
        return map
    }

    /// Adds `other`'s entries, `combine` choosing the value of a name both hold.
    package mutating func merge(_ other: PropertyMap, uniquingKeysWith combine: (Value, Value) -> Value) {
        for entry in other.entries {
            updateValue(self[entry.key].map { combine($0, entry.value) } ?? entry.value, forKey: entry.key)
        }
    }
}

extension PropertyMap: Sequence {
    /// The entries in the order of their names.
    package struct Iterator: IteratorProtocol {
        fileprivate var base: IndexingIterator<[Entry]>

        package mutating func next() -> (key: String, value: Value)? {
            base.next().map { (key: $0.key, value: $0.value) }
        }
    }

    package func makeIterator() -> Iterator { Iterator(base: entries.makeIterator()) }

    package var underestimatedCount: Int { entries.count }
}

extension PropertyMap: ExpressibleByDictionaryLiteral {
    package init(dictionaryLiteral elements: (String, Value)...) {
        // `[:]`, written for every new object's changes and every saved object's, makes no table to sort.
        guard !elements.isEmpty else {
            self.init()
            return
        }
        self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension PropertyMap.Entry: Equatable where Value: Equatable {}
extension PropertyMap.Entry: Hashable where Value: Hashable {}
extension PropertyMap.Entry: Sendable where Value: Sendable {}
extension PropertyMap: Equatable where Value: Equatable {}
extension PropertyMap: Hashable where Value: Hashable {}
extension PropertyMap: Sendable where Value: Sendable {}

extension PropertyMap: CustomStringConvertible {
    package var description: String {
        "[" + entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "]"
    }
}
