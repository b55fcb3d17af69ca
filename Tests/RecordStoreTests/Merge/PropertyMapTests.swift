import Testing

@testable import RecordStore

@Suite("PropertyMap: values by property name, in the order of the names")
struct PropertyMapTests {
    @Test("set in any order, it iterates, compares and hashes as the same map: by name, each name once")
    func orderOfNames() {
        var map = PropertyMap<Int>()
        for (key, value) in [("title", 1), ("added", 2), ("quantity", 3), ("price", 4), ("added", 5)] {
            map[key] = value
        }
        #expect(map.keys == ["added", "price", "quantity", "title"])
        #expect(map.values == [5, 4, 3, 1])
        #expect(map.map(\.key) == map.keys)
        let other: PropertyMap<Int> = ["price": 4, "title": 1, "added": 5, "quantity": 3]
        #expect(map == other)
        #expect(map.hashValue == other.hashValue)
        #expect(PropertyMap(["quantity": 3, "price": 4, "title": 1, "added": 5]) == map)
    }

    @Test("reads, replaces and removes by name; a name it lacks reads as nil")
    func updates() {
        var map: PropertyMap<String> = ["b": "2", "d": "4"]
        #expect(map["b"] == "2" && map["a"] == nil && map["c"] == nil && map["e"] == nil)
        #expect(map.updateValue("two", forKey: "b") == "2")
        #expect(map.updateValue("1", forKey: "a") == nil)
        #expect(map.updateValue(nil, forKey: "d") == "4")
        #expect(map.updateValue(nil, forKey: "z") == nil)
        #expect(map.keys == ["a", "b"] && map["b"] == "two" && map.count == 2)
        map["a"] = nil
        map["b"] = nil
        #expect(map.isEmpty && map == [:])
    }

    @Test("merging keeps both maps' names, the combined value where both hold one")
    func merging() {
        var map: PropertyMap<Int> = ["a": 1, "c": 3]
        map.merge(["b": 20, "c": 30]) { old, new in old + new }
        #expect(map == ["a": 1, "b": 20, "c": 33])
        #expect(map.mapValues { $0 * 2 } == ["a": 2, "b": 40, "c": 66])
    }

    @Test("a map built by appending names in order equals one set in any order")
    func appending() {
        var built = PropertyMap<Int>()
        for (index, key) in ["a", "b", "c"].enumerated() { built.append(key, index) }
        #expect(built == ["c": 2, "a": 0, "b": 1])
    }
}
