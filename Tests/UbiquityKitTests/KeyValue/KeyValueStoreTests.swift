import Foundation
import SyncEngine
import Synchronization
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

/// A store's external changes as heard from the notification and from the AsyncSequence.
final class ChangeLog: Sendable {
    let notified = Mutex<[UbiquitousKeyValueStore.Change]>([])
    let streamed = Mutex<[UbiquitousKeyValueStore.Change]>([])
}

/// Records a store's external changes, from the notification and from the AsyncSequence, until dropped.
final class ChangeRecorder {
    let log = ChangeLog()
    private let observer: any NSObjectProtocol
    private let task: Task<Void, Never>

    init(_ store: UbiquitousKeyValueStore) {
        let changes = store.changes()
        let log = log
        // Collects the stream until the recorder is dropped.
        task = Task { for await change in changes { log.streamed.withLock { $0.append(change) } } }
        observer = NotificationCenter.default.addObserver(
            forName: UbiquitousKeyValueStore.didChangeExternallyNotification, object: store, queue: nil
        ) { note in
            let raw = note.userInfo?[UbiquitousKeyValueStore.changeReasonKey] as? Int ?? -1
            let keys = note.userInfo?[UbiquitousKeyValueStore.changedKeysKey] as? [String] ?? []
            guard let reason = UbiquitousKeyValueStore.ChangeReason(rawValue: raw) else { return }
            let change = UbiquitousKeyValueStore.Change(reason: reason, keys: keys)
            log.notified.withLock { $0.append(change) }
        }
    }

    deinit {
        task.cancel()
        NotificationCenter.default.removeObserver(observer)
    }

    /// What the notification told, in order.
    var notified: [UbiquitousKeyValueStore.Change] { log.notified.withLock { $0 } }

    /// Whether both the notification and the stream told of a change for `reason` naming `keys`.
    func heard(_ reason: UbiquitousKeyValueStore.ChangeReason, keys: Set<String>) -> Bool {
        let match = { (change: UbiquitousKeyValueStore.Change) in
            change.reason == reason && keys.isSubset(of: change.keys)
        }
        return log.notified.withLock { $0.contains(where: match) }
            && log.streamed.withLock { $0.contains(where: match) }
    }
}

@Suite("UbiquitousKeyValueStore", .timeLimit(.minutes(5)))
struct KeyValueStoreTests {
    @Test(
        "A write on the laptop reaches the desktop's store with a server change naming its keys; every type round-trips",
        arguments: EngineMode.allCases)
    func changeReachesOtherDevice(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let mine = UbiquitousKeyValueStore(ubiquity: laptop.ubiquity)
            let theirs = UbiquitousKeyValueStore(ubiquity: desktop.ubiquity)
            let recorder = ChangeRecorder(theirs)
            let date = Date(timeIntervalSince1970: 1_800_000_000)
            mine.set("name", forKey: "sortOrder")
            mine.set(Int64(42), forKey: "count")
            mine.set(0.5, forKey: "ratio")
            mine.set(true, forKey: "flag")
            mine.set(Data([1, 2, 3]), forKey: "bytes")
            mine.set(["milk", Int64(2)] as [Any], forKey: "list")
            mine.set(["when": date] as [String: Any], forKey: "dict")
            // Visible here at once.
            #expect(mine.string(forKey: "sortOrder") == "name")
            #expect(mine.longLong(forKey: "count") == 42)

            let keys: Set = ["sortOrder", "count", "ratio", "flag", "bytes", "list", "dict"]
            #expect(await eventually(.seconds(30)) { Set(theirs.values.keys) == keys })
            // Told as the first sync's values or another device's change (the desktop's first round may come after).
            let told = {
                Set(
                    recorder.notified.filter { [.serverChange, .initialSyncChange].contains($0.reason) }.flatMap(\.keys)
                )
            }
            #expect(await eventually { told() == keys })
            #expect(theirs.string(forKey: "sortOrder") == "name")
            #expect(theirs.longLong(forKey: "count") == 42)
            #expect(theirs.double(forKey: "ratio") == 0.5)
            #expect(theirs.bool(forKey: "flag"))
            #expect(theirs.data(forKey: "bytes") == Data([1, 2, 3]))
            #expect(theirs.array(forKey: "list")?.first as? String == "milk")
            #expect(theirs.dictionary(forKey: "dict")?["when"] as? Date == date)
            #expect(theirs.dictionaryRepresentation.count == keys.count)

            // A removal travels too.
            mine.removeObject(forKey: "flag")
            #expect(await eventually(.seconds(30)) { theirs.object(forKey: "flag") == nil })
            #expect(await eventually { recorder.heard(.serverChange, keys: ["flag"]) })
        }
    }

    @Test(
        "Writes over 1,024 keys or 1 MB are refused with a quota violation and never synced; an over-long key is a clear error",
        arguments: EngineMode.allCases)
    func limits(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let mine = UbiquitousKeyValueStore(ubiquity: laptop.ubiquity)
            let theirs = UbiquitousKeyValueStore(ubiquity: desktop.ubiquity)
            let recorder = ChangeRecorder(mine)
            for index in 0..<1024 { mine.set(Int64(index), forKey: "k\(index)") }
            #expect(mine.values.count == 1024)
            mine.set(Int64(1), forKey: "one-too-many")
            #expect(mine.object(forKey: "one-too-many") == nil)
            #expect(mine.lastError?.code == .keyValueTooManyKeys)
            #expect(await eventually { recorder.heard(.quotaViolationChange, keys: ["one-too-many"]) })

            for index in 0..<1024 { mine.removeObject(forKey: "k\(index)") }
            mine.set(Data(count: 600_000), forKey: "big")
            mine.set(Data(count: 600_000), forKey: "bigger")
            #expect(mine.data(forKey: "big")?.count == 600_000)
            #expect(mine.object(forKey: "bigger") == nil)
            #expect(mine.lastError?.code == .keyValueStoreTooLarge)
            #expect(await eventually { recorder.heard(.quotaViolationChange, keys: ["bigger"]) })

            #expect(throws: ProtocolError.self) {
                try mine.setValue(.string("x"), forKey: String(repeating: "k", count: 65))
            }
            let refusal = #expect(throws: ProtocolError.self) { try mine.setValue(.string("x"), forKey: "") }
            #expect(refusal?.code == .keyValueKeyTooLong)

            // What was refused never reaches the other device; what was taken does.
            mine.set("done", forKey: "marker")
            #expect(await eventually(.seconds(30)) { theirs.string(forKey: "marker") == "done" })
            #expect(theirs.data(forKey: "big")?.count == 600_000)
            #expect(theirs.object(forKey: "bigger") == nil)
            #expect(theirs.object(forKey: "one-too-many") == nil)
            #expect(theirs.object(forKey: "k5") == nil)
        }
    }

    @Test("A key written on both devices settles on the later write everywhere", arguments: EngineMode.allCases)
    func laterWriteWins(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let mine = UbiquitousKeyValueStore(ubiquity: laptop.ubiquity)
            let theirs = UbiquitousKeyValueStore(ubiquity: desktop.ubiquity)
            mine.set("laptop's", forKey: "theme")
            // The laptop's engine has taken its write, and stamped it, before the desktop writes: the desktop's is the
            // later write, though neither has reached the service yet.
            await mine.synchronized()
            theirs.set("desktop's", forKey: "theme")
            #expect(await eventually(.seconds(30)) { mine.string(forKey: "theme") == "desktop's" })
            #expect(theirs.string(forKey: "theme") == "desktop's")
            // And stays so once each device has heard everything the other sent: a write the laptop makes now goes to
            // the service after its write of the key, and one the desktop makes once it has heard of the laptop's goes
            // after that; each device's store reads the service's changes in order.
            mine.set("laptop's", forKey: "settled")
            #expect(await eventually(.seconds(30)) { theirs.string(forKey: "settled") == "laptop's" })
            theirs.set("desktop's", forKey: "settled")
            #expect(await eventually(.seconds(30)) { mine.string(forKey: "settled") == "desktop's" })
            #expect(mine.string(forKey: "theme") == "desktop's")
            #expect(theirs.string(forKey: "theme") == "desktop's")
        }
    }

    @Test(
        "Values persist on the device at once: a new store sees them; another account's store sees none of them",
        arguments: EngineMode.allCases)
    func persistenceAndAccounts(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { _, desktop, service in
            let store = UbiquitousKeyValueStore(ubiquity: desktop.ubiquity)
            store.set("alice's", forKey: "owner")
            await store.synchronized()
            #expect(UbiquitousKeyValueStore(ubiquity: desktop.ubiquity).string(forKey: "owner") == "alice's")

            let recorder = ChangeRecorder(store)
            let bob = try await service.signIn(account: "bob", device: "desktop")
            let profile = DeviceProfile(
                server: service.baseURL, account: "bob", token: bob.token ?? "",
                device: SavingDevice(id: DeviceID(), name: "desktop"))
            let engine = try await desktop.switchAccount(to: profile, as: "desktop-bob")
            #expect(await eventually { recorder.heard(.accountChange, keys: ["owner"]) })
            #expect(store.object(forKey: "owner") == nil)
            #expect(store.values.isEmpty)
            #expect(UbiquitousKeyValueStore(ubiquity: desktop.ubiquity).object(forKey: "owner") == nil)
            if let engine { await engine.stop(with: SIGTERM) }
        }
    }
}
