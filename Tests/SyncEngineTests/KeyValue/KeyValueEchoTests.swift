import Foundation
import SyncEngine
import Testing
import UbiquityProtocol
import UbiquityTestSupport

/// A device's own key-value writes, read back from the service, are not news: an app that reloads its settings on
/// every server change would otherwise redo work — or undo a newer local edit — after each of its own writes.
@Suite("Key-value store: a device's own writes are not announced back to it")
struct KeyValueEchoTests {
    /// Values of every kind whose stored form could differ from the one read back: several keys in a dictionary
    /// (nested too), arrays, numbers, bytes.
    static let values: [String: PropertyListValue] = [
        "shops": .dictionary([
            "aisle": .integer(7),
            "bakery": .string("Rue Mouffetard"),
            "butcher": .string("Les Halles"),
            "cheese": .dictionary(["brie": .bool(true), "comté": .double(0.1), "roquefort": .integer(-3)]),
            "dairy": .array([.string("milk"), .integer(2), .bool(false)]),
            "greengrocer": .string("Marché d'Aligre"),
            "logo": .data(Data([0, 1, 2, 254, 255])),
        ]),
        "recent": .array([.string("milk"), .dictionary(["eggs": .integer(12), "flour": .double(1.5)]), .array([])]),
        "fontSize": .integer(14),
    ]

    @Test("Values written here and sent in a round come back from the service without a server change for their keys")
    func ownWritesAreNotServerChanges() async throws {
        try await DevicePair.run { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            try await laptop.syncOnce()  // past the initial sync: what comes from the service now is a server change
            let events = laptop.events()
            try await laptop.setKeyValues(Self.values)
            // The other device's write comes down in the same round: the listener does hear server changes.
            let desktopWrite: [String: PropertyListValue] = ["fromDesktop": .string("aisle")]
            try await desktop.setKeyValues(desktopWrite)
            try await desktop.syncOnce()
            try await laptop.syncOnce()
            try await laptop.syncOnce()
            // Events are handed to the stream as they happen: everything the rounds announced is in it before this.
            try await laptop.setKeyValues(["sentinel": .bool(true)])

            let written = Set(Self.values.keys)
            let (heard, echoed, fromService) = await finished(
                Task {
                    var heard: [String] = []  // the written keys heard of as a local write
                    var echoed: [String] = []  // the written keys heard of as coming from the service
                    var fromService: Set<String> = []
                    for await event in events {
                        guard case .keyValuesChanged(let keys, let reason) = event else { continue }
                        if reason == .localChange {
                            if keys == ["sentinel"] { break }
                            heard += keys.filter(written.contains)
                        } else {
                            if reason == .serverChange { fromService.formUnion(keys) }
                            echoed += keys.filter(written.contains).map { "\($0) (\(reason))" }
                        }
                    }
                    return (heard, echoed, fromService)
                })
            #expect(Set(heard) == written, "the write was not heard of")
            #expect(fromService.contains("fromDesktop"), "the other device's write was not heard of as a server change")
            #expect(echoed.isEmpty, "the device's own write was announced back to it: \(echoed)")

            let both = Self.values.merging(desktopWrite) { $1 }
            #expect(try await laptop.keyValues() == both.merging(["sentinel": .bool(true)]) { $1 })
            try await desktop.syncOnce()
            #expect(try await desktop.keyValues() == both, "the write did not reach the service")
        }
    }
}
