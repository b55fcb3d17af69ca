import Foundation
import Testing
import UbiquityProtocol
import UbiquityServer

@Suite("Key-value store: last writer wins per key, limits refuse a batch whole")
struct KeyValueStoreStateTests {
    let phone = DeviceID()
    let laptop = DeviceID()

    func at(_ seconds: TimeInterval) -> Date { Date(timeIntervalSince1970: 1_800_000_000 + seconds) }

    @Test("two devices' writes converge to the same store in either order")
    func convergesInAnyOrder() throws {
        let fromPhone = [
            KeyValueStoreState.Write(key: "sort", value: .string("name"), timestamp: at(10)),
            KeyValueStoreState.Write(key: "theme", value: .string("dark"), timestamp: at(30)),
        ]
        let fromLaptop = [
            KeyValueStoreState.Write(key: "sort", value: .string("date"), timestamp: at(20)),
            KeyValueStoreState.Write(key: "theme", value: nil, timestamp: at(25)),
        ]
        var phoneFirst = KeyValueStoreState()
        _ = try phoneFirst.apply(fromPhone, from: phone)
        _ = try phoneFirst.apply(fromLaptop, from: laptop)
        var laptopFirst = KeyValueStoreState()
        _ = try laptopFirst.apply(fromLaptop, from: laptop)
        _ = try laptopFirst.apply(fromPhone, from: phone)
        let expected: [String: PropertyListValue] = ["sort": .string("date"), "theme": .string("dark")]
        #expect(phoneFirst.values == expected)
        #expect(laptopFirst.values == expected)
    }

    @Test("a remove leaves a tombstone: an older put arriving later does not bring the key back")
    func tombstones() throws {
        var store = KeyValueStoreState()
        _ = try store.apply([.init(key: "draft", value: .bool(true), timestamp: at(10))], from: phone)
        #expect(try store.apply([.init(key: "draft", value: nil, timestamp: at(30))], from: laptop) == ["draft"])
        #expect(try store.apply([.init(key: "draft", value: .bool(false), timestamp: at(20))], from: phone) == [])
        #expect(store.values["draft"] == nil)
        let changes = store.changes(since: 1)
        #expect(changes.map(\.key) == ["draft"])
        #expect(changes.first?.entry.value == nil, "the feed carries the remove")
    }

    @Test("equal timestamps: the greater device id wins, whatever the order")
    func tieBrokenByDevice() throws {
        let (low, high) = phone < laptop ? (phone, laptop) : (laptop, phone)
        for order in [[low, high], [high, low]] {
            var store = KeyValueStoreState()
            for device in order {
                _ = try store.apply(
                    [.init(key: "k", value: .string(device.description), timestamp: at(5))], from: device)
            }
            #expect(store.values["k"] == .string(high.description))
        }
    }

    @Test("a batch over a limit is refused whole, naming the limit, and changes nothing")
    func limitsRefuseWhole() throws {
        var store = KeyValueStoreState(limits: KeyValueLimits(maximumTotalBytes: 1_048_576, maximumKeyCount: 3))
        _ = try store.apply(
            [
                .init(key: "a", value: .integer(1), timestamp: at(1)),
                .init(key: "b", value: .integer(2), timestamp: at(1)),
            ],
            from: phone)
        let before = store
        do {
            _ = try store.apply(
                [
                    .init(key: "c", value: .integer(3), timestamp: at(2)),
                    .init(key: "d", value: .integer(4), timestamp: at(2)),
                ],
                from: phone)
            Issue.record("a fourth key was accepted")
        } catch {
            #expect(error.code == .keyValueTooManyKeys)
            #expect(error.message.contains("3"))
        }
        #expect(store == before)

        let longKey = String(repeating: "k", count: 65)
        #expect(throws: ProtocolError.self) {
            try store.apply([.init(key: longKey, value: .integer(1), timestamp: at(3))], from: phone)
        }
        #expect(store == before)

        // A remove in the same batch makes room.
        #expect(
            try store.apply(
                [
                    .init(key: "a", value: nil, timestamp: at(4)),
                    .init(key: "c", value: .integer(3), timestamp: at(4)),
                    .init(key: "d", value: .integer(4), timestamp: at(4)),
                ],
                from: laptop
            ).sorted() == ["a", "c", "d"])
        #expect(Set(store.values.keys) == ["b", "c", "d"])
    }
}
