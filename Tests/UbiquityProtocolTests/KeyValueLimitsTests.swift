import Foundation
import SyncSimulation
import Testing

@testable import UbiquityProtocol

@Suite("Key-value limits")
struct KeyValueLimitsTests {
    let limits = KeyValueLimits.apple

    /// A string value whose entry under `key` counts exactly `bytes`.
    func value(key: String, bytes: Int) -> PropertyListValue {
        let overhead = KeyValueLimits.size(key: key, value: .string(""))
        return .string(String(repeating: "x", count: bytes - overhead))
    }

    func code(_ store: [String: PropertyListValue], puts: [String: PropertyListValue], removes: Set<String> = [])
        -> ProtocolError.Code?
    {
        limits.violation(store: store, puts: puts, removes: removes)?.code
    }

    @Test("the check with the store's size kept by the caller agrees with applying each batch and counting again")
    func keptSizeAgreesWithRecount() {
        let limits = KeyValueLimits(maximumTotalBytes: 300, maximumKeyCount: 6, maximumKeyBytes: 3)
        var random = SeededGenerator(seed: 0x5eed)
        let keys = ["a", "b", "c", "d", "e", "f", "g", "h", "long"]
        var store: [String: PropertyListValue] = [:]
        var bytes = 0
        var accepted = 0
        for _ in 0..<5_000 {
            var puts: [String: PropertyListValue] = [:]
            var removes: Set<String> = []
            for _ in 0..<Int(random.next() % 4) {
                let key = keys[Int(random.next() % UInt64(keys.count))]
                puts[key] = .string(String(repeating: "x", count: Int(random.next() % 40)))
            }
            for _ in 0..<Int(random.next() % 3) { removes.insert(keys[Int(random.next() % UInt64(keys.count))]) }
            // The oracle: apply the batch to a copy and count it whole.
            var applied = store
            for key in removes { applied[key] = nil }
            applied.merge(puts) { _, new in new }
            let expected: ProtocolError.Code? =
                if puts.keys.contains(where: { $0.isEmpty || $0.utf8.count > 3 }) {
                    .keyValueKeyTooLong
                } else if applied.count > 6 {
                    .keyValueTooManyKeys
                } else if KeyValueLimits.size(of: applied) > 300 {
                    .keyValueStoreTooLarge
                } else {
                    nil
                }
            let (error, after) = limits.violation(store: store, bytes: bytes, puts: puts, removes: removes)
            #expect(error?.code == expected)
            if error == nil {
                store = applied
                accepted += 1
            }
            #expect(after == KeyValueLimits.size(of: store))
            bytes = after
        }
        #expect(accepted > 500, "the batches both fit and break the limits")
    }

    @Test("Apple's numbers")
    func numbers() {
        #expect(limits.maximumTotalBytes == 1_048_576)
        #expect(limits.maximumKeyCount == 1024)
        #expect(limits.maximumKeyBytes == 64)
        #expect(KeyValueLimits.size(key: "k", value: .integer(1)) == 1 + #"{"type":"integer","value":1}"#.utf8.count)
    }

    @Test("a store exactly at 1 MB is accepted; one byte more is refused whole")
    func totalSize() throws {
        var store: [String: PropertyListValue] = [:]
        for index in 0..<15 { store["k\(index)"] = value(key: "k\(index)", bytes: 65_536) }
        #expect(store.reduce(0) { $0 + KeyValueLimits.size(key: $1.key, value: $1.value) } == 15 * 65_536)
        let exact = ["last": value(key: "last", bytes: 65_536)]
        #expect(code(store, puts: exact) == nil)
        #expect(throws: Never.self) { try limits.check(store: store, puts: exact) }
        let over = ["last": value(key: "last", bytes: 65_537), "small": .bool(true)]
        #expect(code(store, puts: over) == .keyValueStoreTooLarge)
        let error = try #require(limits.violation(store: store, puts: over))
        #expect(error.message.contains("1048576"))
        #expect { try limits.check(store: store, puts: over) } throws: {
            ($0 as? ProtocolError)?.code == .keyValueStoreTooLarge
        }
        // Replacing a value counts the new value only.
        #expect(code(store.merging(exact) { $1 }, puts: ["last": value(key: "last", bytes: 65_536)]) == nil)
        #expect(
            code(store.merging(exact) { $1 }, puts: ["last": value(key: "last", bytes: 65_537)])
                == .keyValueStoreTooLarge)
    }

    @Test("removes that free space let puts in the same batch fit")
    func removesFreeSpace() {
        var store: [String: PropertyListValue] = [:]
        for index in 0..<16 { store["k\(index)"] = value(key: "k\(index)", bytes: 65_536) }
        #expect(code(store, puts: [:]) == nil)
        let put = ["new": value(key: "new", bytes: 1000)]
        #expect(code(store, puts: put) == .keyValueStoreTooLarge)
        #expect(code(store, puts: put, removes: ["k3"]) == nil)
        #expect(code(store, puts: put, removes: ["absent"]) == .keyValueStoreTooLarge)
        // Removed and put again in one batch: the put stands, and its size counts.
        #expect(code(store, puts: ["k3": value(key: "k3", bytes: 65_536)], removes: ["k3"]) == nil)
        #expect(code(store, puts: ["k3": value(key: "k3", bytes: 65_537)], removes: ["k3"]) == .keyValueStoreTooLarge)
    }

    @Test("1024 keys are accepted; a 1025th is refused unless a remove makes room")
    func keyCount() {
        var store: [String: PropertyListValue] = [:]
        for index in 0..<1023 { store["k\(index)"] = .bool(true) }
        #expect(code(store, puts: ["k1023": .bool(true)]) == nil)
        store["k1023"] = .bool(true)
        #expect(code(store, puts: ["k0": .bool(false)]) == nil, "overwriting adds no key")
        #expect(code(store, puts: ["extra": .bool(true)]) == .keyValueTooManyKeys)
        #expect(code(store, puts: ["extra": .bool(true)], removes: ["k5"]) == nil)
        #expect(
            code(store, puts: ["extra": .bool(true), "extra2": .bool(true)], removes: ["k5"]) == .keyValueTooManyKeys)
    }

    @Test("keys of 64 bytes are accepted; 65 bytes or empty are refused")
    func keyLength() throws {
        let key64 = String(repeating: "k", count: 64)
        #expect(code([:], puts: [key64: .integer(1)]) == nil)
        #expect(code([:], puts: [key64 + "k": .integer(1)]) == .keyValueKeyTooLong)
        #expect(code([:], puts: ["": .integer(1)]) == .keyValueKeyTooLong)
        // Bytes, not characters: 32 × "é" is 64 bytes, 33 × is 66.
        #expect(code([:], puts: [String(repeating: "é", count: 32): .integer(1)]) == nil)
        #expect(code([:], puts: [String(repeating: "é", count: 33): .integer(1)]) == .keyValueKeyTooLong)
        // The key length is reported first, even when the batch also breaks the size limit.
        let huge = PropertyListValue.data(Data(count: 2_000_000))
        let error = try #require(limits.violation(store: [:], puts: [key64 + "k": .integer(1), "big": huge]))
        #expect(error.code == .keyValueKeyTooLong)
        #expect(error.message.contains("64"))
        #expect(code([:], puts: ["big": huge]) == .keyValueStoreTooLarge)
    }
}
