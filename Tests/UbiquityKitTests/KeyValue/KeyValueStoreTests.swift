import Foundation
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@Suite("UbiquitousKeyValueStore", .timeLimit(.minutes(5)))
struct KeyValueStoreTests {
    /// One value of every property-list type, nested ones included.
    static let everyType: [String: PropertyListValue] = [
        "string": .string("Grüße 🍏"),
        "integer": .integer(.min),
        "double": .double(0.1),
        "true": .bool(true),
        "false": .bool(false),
        "date": .date(Date(timeIntervalSince1970: 1_800_000_000.25)),
        "data": .data(Data([0, 1, 2, 255])),
        "empty data": .data(Data()),
        "array": .array([.string("milk"), .integer(2), .array([.bool(true)]), .dictionary(["n": .double(-1.5)])]),
        "dictionary": .dictionary(["when": .date(Date(timeIntervalSince1970: 0)), "list": .array([]), "n": .integer(7)]
        ),
    ]

    @Test(
        "A write on the laptop reaches the desktop's store, told as a server change naming exactly its keys by the notification and the AsyncSequence; every type round-trips",
        arguments: EngineMode.allCases)
    func changeReachesOtherDevice(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let mine = UbiquitousKeyValueStore(ubiquity: laptop.ubiquity)
            let theirs = UbiquitousKeyValueStore(ubiquity: desktop.ubiquity)
            // Both devices past their first sync of the store: what follows is another device's change.
            mine.set("ready", forKey: "warm-up")
            #expect(await eventually(.seconds(30)) { theirs.string(forKey: "warm-up") == "ready" })
            let recorder = KeyValueChangeRecorder(theirs)

            for (key, value) in Self.everyType { try mine.setValue(value, forKey: key) }
            // Visible here at once, through either API.
            #expect(mine.value(forKey: "array") == Self.everyType["array"])
            #expect(mine.longLong(forKey: "integer") == .min)

            let keys = Set(Self.everyType.keys)
            #expect(
                await eventually(.seconds(30)) { keys.allSatisfy { theirs.value(forKey: $0) == Self.everyType[$0] } })
            #expect(await eventually { recorder.keys(told: .serverChange) == (keys, keys) })
            #expect(recorder.notified.allSatisfy { $0.reason == .serverChange && keys.isSuperset(of: $0.keys) })
            #expect(recorder.streamed.allSatisfy { $0.reason == .serverChange && keys.isSuperset(of: $0.keys) })

            // Apple's typed getters.
            #expect(theirs.string(forKey: "string") == "Grüße 🍏")
            #expect(theirs.longLong(forKey: "integer") == .min)
            #expect(theirs.double(forKey: "double") == 0.1)
            #expect(theirs.bool(forKey: "true"))
            #expect(!theirs.bool(forKey: "false"))
            #expect(theirs.object(forKey: "date") as? Date == Date(timeIntervalSince1970: 1_800_000_000.25))
            #expect(theirs.data(forKey: "data") == Data([0, 1, 2, 255]))
            #expect(theirs.data(forKey: "empty data") == Data())
            let array = try #require(theirs.array(forKey: "array"))
            #expect(array.count == 4)
            #expect(array[0] as? String == "milk")
            #expect(array[1] as? Int64 == 2)
            #expect((array[2] as? [Any])?.first as? Bool == true)
            #expect((array[3] as? [String: Any])?["n"] as? Double == -1.5)
            let dictionary = try #require(theirs.dictionary(forKey: "dictionary"))
            #expect(dictionary["when"] as? Date == Date(timeIntervalSince1970: 0))
            #expect((dictionary["list"] as? [Any])?.isEmpty == true)
            #expect(dictionary["n"] as? Int == 7)
            // A getter of another type answers as Apple's does.
            #expect(theirs.string(forKey: "integer") == nil)
            #expect(theirs.longLong(forKey: "string") == 0)
            #expect(theirs.double(forKey: "missing") == 0)
            #expect(theirs.dictionaryRepresentation.count == keys.count + 1)

            // A removal travels too, told the same way.
            mine.removeObject(forKey: "true")
            #expect(await eventually(.seconds(30)) { theirs.object(forKey: "true") == nil })
            #expect(await eventually { recorder.heard(.serverChange, keys: ["true"]) })
            #expect(!recorder.named("warm-up"))
        }
    }

    @Test(
        "A key written on both devices settles on the later write on both, whichever device wrote last",
        arguments: EngineMode.allCases)
    func laterWriteWins(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let mine = UbiquitousKeyValueStore(ubiquity: laptop.ubiquity)
            let theirs = UbiquitousKeyValueStore(ubiquity: desktop.ubiquity)
            // Each pair of writes is made before either device heard the other's; the second is the later one.
            mine.set("laptop's", forKey: "theme")
            await mine.synchronized()
            theirs.set("desktop's", forKey: "theme")
            theirs.set("desktop's", forKey: "sort")
            await theirs.synchronized()
            mine.set("laptop's", forKey: "sort")
            await mine.synchronized()

            let settled = {
                [mine, theirs].allSatisfy {
                    $0.string(forKey: "theme") == "desktop's" && $0.string(forKey: "sort") == "laptop's"
                }
            }
            #expect(await eventually(.seconds(30)) { settled() })
            // And stays so once both devices have gone past these writes.
            mine.set(Int64(1), forKey: "after")
            #expect(await eventually(.seconds(30)) { theirs.longLong(forKey: "after") == 1 })
            theirs.set(Int64(2), forKey: "after")
            #expect(await eventually(.seconds(30)) { mine.longLong(forKey: "after") == 2 })
            #expect(settled())
        }
    }

    @Test(
        "Values persist on the device at once: another store sees them, they survive restarting the device's UbiquityKit, and another process's write reaches the store",
        arguments: EngineMode.allCases)
    func persistence(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let store = UbiquitousKeyValueStore(ubiquity: desktop.ubiquity)
            store.set("kept", forKey: "saved")
            store.set(Int64(7), forKey: "count")
            store.removeObject(forKey: "count")
            store.set(Int64(8), forKey: "count")
            // Another store of the device sees the writes at once.
            let other = UbiquitousKeyValueStore(ubiquity: desktop.ubiquity)
            #expect(other.string(forKey: "saved") == "kept")
            #expect(other.longLong(forKey: "count") == 8)

            // Shut down at once: the writes go to the engine first.
            await desktop.ubiquity.shutdown()
            let restarted = Ubiquity(configuration: desktop.ubiquity.configuration)
            do {
                // Loaded from the state database before the container is even open.
                let reloaded = UbiquitousKeyValueStore(ubiquity: restarted)
                #expect(reloaded.string(forKey: "saved") == "kept")
                #expect(reloaded.longLong(forKey: "count") == 8)
                #expect(reloaded.synchronize())
                #expect(try await restarted.containerURL(forIdentifier: nil) != nil)

                // Another process of the device writes through the engine (once it serves its socket; before, the
                // command would write the state database itself); the store takes it.
                let layout = ContainerLayout(root: desktop.root, container: desktop.container)
                var serving = false
                for _ in 0..<300 where !serving {
                    if let client = try? await EngineSocketClient.connect(to: layout) {
                        await client.close()
                        serving = true
                    } else {
                        try await Task.sleep(for: .milliseconds(100))
                    }
                }
                #expect(serving)
                let (status, output) = try await UbiquityProcess.run(
                    [
                        "kv", "set", "fromShell", "hello", "--container", desktop.container.string, "--profile",
                        desktop.name, "--root", desktop.root.path,
                    ],
                    environment: ["XDG_CONFIG_HOME": desktop.config.path],
                    log: desktop.root.deletingLastPathComponent().appendingPathComponent("kv-set.log"))
                #expect(status == 0, "ubiquity kv set: \(output)")
                #expect(await eventually(.seconds(30)) { reloaded.string(forKey: "fromShell") == "hello" })

                // And all of it reached the other device.
                let laptops = UbiquitousKeyValueStore(ubiquity: laptop.ubiquity)
                #expect(
                    await eventually(.seconds(30)) {
                        laptops.string(forKey: "saved") == "kept" && laptops.longLong(forKey: "count") == 8
                            && laptops.string(forKey: "fromShell") == "hello"
                    })
            } catch {
                await restarted.shutdown()
                throw error
            }
            await restarted.shutdown()
        }
    }
}
