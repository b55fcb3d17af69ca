import Foundation
import Synchronization
import Testing
import UbiquityKit
import UbiquityTestSupport

/// What a ``SyncedSettings`` heard: each change's reason and keys.
final class HeardChanges: Sendable {
    let list = Mutex<[(reason: Int, keys: [String])]>([])
}

/// Settings code as written for `NSUbiquitousKeyValueStore` on Apple's platforms, with only the type name changed.
final class SyncedSettings {
    let store: UbiquitousKeyValueStore
    let heard = HeardChanges()
    private var observer: (any NSObjectProtocol)?

    init(store: UbiquitousKeyValueStore) {
        self.store = store
        let heard = heard
        observer = NotificationCenter.default.addObserver(
            forName: UbiquitousKeyValueStore.didChangeExternallyNotification, object: store, queue: nil
        ) { notification in
            guard let userInfo = notification.userInfo,
                let reason = userInfo[NSUbiquitousKeyValueStoreChangeReasonKey] as? Int
            else { return }
            let keys = userInfo[NSUbiquitousKeyValueStoreChangedKeysKey] as? [String] ?? []
            switch reason {
            case NSUbiquitousKeyValueStoreServerChange, NSUbiquitousKeyValueStoreInitialSyncChange,
                NSUbiquitousKeyValueStoreQuotaViolationChange, NSUbiquitousKeyValueStoreAccountChange:
                heard.list.withLock { $0.append((reason, keys)) }
            default: break
            }
        }
    }

    deinit { if let observer { NotificationCenter.default.removeObserver(observer) } }

    func save() {
        store.set("aisle", forKey: "sortOrder")
        store.set(true, forKey: "showChecked")
        store.set(3, forKey: "columns")
        store.set(Int64(42), forKey: "launches")
        store.set(2.5, forKey: "zoom")
        store.set(["milk", "eggs"], forKey: "recent")
        store.set(["milk": 2, "eggs": 12], forKey: "counts")
        store.set(Data("note".utf8), forKey: "note")
        store.set(Date(timeIntervalSince1970: 1_700_000_000), forKey: "lastOpened")
        store.set(nil as String?, forKey: "gone")
        store.removeObject(forKey: "obsolete")
        store.synchronize()
    }
}

@Suite("UbiquitousKeyValueStore as NSUbiquitousKeyValueStore", .timeLimit(.minutes(5)))
struct KeyValueApplePortTests {
    @Test(
        "Code written for NSUbiquitousKeyValueStore works with the type name changed: setters, getters, bridging casts, Apple's notification keys and reasons",
        arguments: EngineMode.allCases)
    func portedCode(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let mine = SyncedSettings(store: UbiquitousKeyValueStore(ubiquity: laptop.ubiquity))
            let theirs = SyncedSettings(store: UbiquitousKeyValueStore(ubiquity: desktop.ubiquity))
            mine.save()
            let store = theirs.store
            #expect(await eventually(.seconds(30)) { store.object(forKey: "lastOpened") != nil })
            #expect(await eventually { store.dictionaryRepresentation.count == 9 })
            #expect(store.string(forKey: "sortOrder") == "aisle")
            #expect(store.bool(forKey: "showChecked"))
            #expect(store.object(forKey: "columns") as? Int == 3)
            #expect(store.longLong(forKey: "launches") == 42)
            #expect(store.object(forKey: "launches") as? NSNumber == NSNumber(value: 42))
            #expect(store.double(forKey: "zoom") == 2.5)
            #expect(store.object(forKey: "zoom") as? Double == 2.5)
            #expect(store.array(forKey: "recent") as? [String] == ["milk", "eggs"])
            #expect(store.dictionary(forKey: "counts")?["eggs"] as? Int == 12)
            #expect(store.data(forKey: "note") == Data("note".utf8))
            #expect(store.object(forKey: "lastOpened") as? Date == Date(timeIntervalSince1970: 1_700_000_000))
            #expect(store.object(forKey: "gone") == nil)
            #expect(await eventually { theirs.heard.list.withLock { $0 }.contains { $0.keys.contains("sortOrder") } })
            #expect(theirs.heard.list.withLock { $0 }.allSatisfy { [0, 1].contains($0.reason) })

            // Apple's raw values.
            #expect(NSUbiquitousKeyValueStoreServerChange == 0)
            #expect(NSUbiquitousKeyValueStoreInitialSyncChange == 1)
            #expect(NSUbiquitousKeyValueStoreQuotaViolationChange == 2)
            #expect(NSUbiquitousKeyValueStoreAccountChange == 3)
            #expect(
                UbiquitousKeyValueStore.didChangeExternallyNotification.rawValue
                    == "NSUbiquitousKeyValueStoreDidChangeExternallyNotification")
            #expect(NSUbiquitousKeyValueStoreChangeReasonKey == "NSUbiquitousKeyValueStoreChangeReasonKey")
            #expect(NSUbiquitousKeyValueStoreChangedKeysKey == "NSUbiquitousKeyValueStoreChangedKeysKey")
        }
    }

    @Test("`default` is one store per UbiquityKit instance, of its first container")
    func defaultStore() {
        let first = UbiquitousKeyValueStore.default
        let second = UbiquitousKeyValueStore.default
        // Another test may change `Ubiquity.default` in between; the same instance always gives the same store.
        #expect(first === second || first.ubiquity !== second.ubiquity)
        #expect(first.containerIdentifier == nil)
    }
}
