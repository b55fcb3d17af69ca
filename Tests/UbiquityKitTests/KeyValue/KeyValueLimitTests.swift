import Foundation
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@Suite("UbiquitousKeyValueStore limits", .timeLimit(.minutes(5)))
struct KeyValueLimitTests {
    @Test(
        "Writes over 1,024 keys, over 1 MB in all or in one value are refused with a quota violation naming their keys; nothing of them is stored or synced",
        arguments: EngineMode.allCases)
    func quotaViolations(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let mine = UbiquitousKeyValueStore(ubiquity: laptop.ubiquity)
            let theirs = UbiquitousKeyValueStore(ubiquity: desktop.ubiquity)
            let recorder = KeyValueChangeRecorder(mine)

            // 1,024 keys fit; a 1,025th does not, while a new value of a key already there does.
            for index in 0..<1024 { mine.set(Int64(index), forKey: "k\(index)") }
            #expect(mine.values.count == 1024)
            mine.set(Int64(1), forKey: "one-too-many")
            #expect(mine.object(forKey: "one-too-many") == nil)
            #expect(mine.lastError?.code == .tooManyKeys)
            #expect(await eventually { recorder.heard(.quotaViolationChange, keys: ["one-too-many"]) })
            let refusal = #expect(throws: KeyValueStoreError.self) {
                try mine.setValue(.integer(1), forKey: "one-too-many")
            }
            #expect(refusal?.code == .tooManyKeys)
            mine.set(Int64(-1), forKey: "k0")
            #expect(mine.longLong(forKey: "k0") == -1)
            #expect(
                await eventually(.seconds(60)) { theirs.values.count == 1024 && theirs.longLong(forKey: "k0") == -1 })

            // 1 MB in all: a second 600 kB value does not fit beside the first.
            for index in 0..<1024 { mine.removeObject(forKey: "k\(index)") }
            mine.set(Data(count: 600_000), forKey: "big")
            mine.set(Data(count: 600_000), forKey: "bigger")
            #expect(mine.data(forKey: "big")?.count == 600_000)
            #expect(mine.object(forKey: "bigger") == nil)
            #expect(mine.lastError?.code == .storeTooLarge)
            #expect(await eventually { recorder.heard(.quotaViolationChange, keys: ["bigger"]) })

            // Nor does a single value over 1 MB in an otherwise empty store.
            mine.removeObject(forKey: "big")
            mine.set(Data(count: 1_100_000), forKey: "huge")
            #expect(mine.object(forKey: "huge") == nil)
            #expect(mine.lastError?.code == .storeTooLarge)
            #expect(await eventually { recorder.heard(.quotaViolationChange, keys: ["huge"]) })
            mine.set(Data(count: 600_000), forKey: "big")

            // Nothing refused was stored on the device or reached the other one; what was taken did.
            mine.set("done", forKey: "marker")
            await mine.synchronized()
            let stored = try LocalStateStore(
                url: ContainerLayout(root: laptop.root, container: laptop.container).stateDatabase
            )
            .keyValues()
            #expect(Set(stored.keys) == ["big", "marker"])
            #expect(await eventually(.seconds(30)) { theirs.string(forKey: "marker") == "done" })
            #expect(Set(theirs.values.keys) == ["big", "marker"])
            #expect(theirs.data(forKey: "big")?.count == 600_000)
        }
    }

    @Test(
        "A key over 64 UTF-8 bytes or empty is a clear error: the throwing API throws it, Apple's setters log and keep it without trapping; a value that is not a property list is refused the same way",
        arguments: EngineMode.allCases)
    func badKeysAndValues(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let mine = UbiquitousKeyValueStore(ubiquity: laptop.ubiquity)
            let theirs = UbiquitousKeyValueStore(ubiquity: desktop.ubiquity)
            let recorder = KeyValueChangeRecorder(mine)
            let longest = String(repeating: "k", count: 64)
            let tooLong = String(repeating: "k", count: 65)
            // 33 characters, 66 bytes: the limit is on UTF-8 bytes.
            let tooLongInBytes = String(repeating: "é", count: 33)

            for key in [tooLong, tooLongInBytes, ""] {
                do throws(KeyValueStoreError) {
                    try mine.setValue(.string("x"), forKey: key)
                    Issue.record("a key of \(key.utf8.count) bytes was taken")
                } catch {
                    #expect(error.code == .keyTooLong)
                    #expect(error.message.contains("64"))
                }
                mine.set("x", forKey: key)
                #expect(mine.lastError?.code == .keyTooLong)
                #expect(mine.object(forKey: key) == nil)
            }
            try mine.setValue(.string("fits"), forKey: longest)
            mine.set("fits too", forKey: String(repeating: "é", count: 32))

            mine.set(URL(fileURLWithPath: "/tmp"), forKey: "url")
            #expect(mine.lastError?.code == .notPropertyList)
            mine.set(["fine", URL(fileURLWithPath: "/tmp")] as [Any], forKey: "list")
            #expect(mine.lastError?.code == .notPropertyList)
            #expect(mine.object(forKey: "url") == nil && mine.object(forKey: "list") == nil)

            #expect(await eventually(.seconds(30)) { theirs.string(forKey: longest) == "fits" })
            #expect(await eventually { theirs.values.count == 2 })
            // A bad key or value is the caller's error, not a quota violation.
            #expect(recorder.notified.isEmpty)
        }
    }
}
