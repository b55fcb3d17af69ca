import Foundation
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@Suite("UbiquitousKeyValueStore accounts", .timeLimit(.minutes(5)))
struct KeyValueAccountTests {
    @Test(
        "Signing in as another account is told as an account change; none of the first account's values are visible, the second's are, writes go to the second; signing back in brings the first's back",
        arguments: EngineMode.allCases)
    func accountChange(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, service in
            // Alice's values, on both her devices.
            let store = UbiquitousKeyValueStore(ubiquity: desktop.ubiquity)
            store.set("alice's", forKey: "owner")
            store.set(Int64(1), forKey: "alice only")
            let alicesLaptop = UbiquitousKeyValueStore(ubiquity: laptop.ubiquity)
            #expect(await eventually(.seconds(30)) { alicesLaptop.longLong(forKey: "alice only") == 1 })

            // Bob's values, written on a phone of his.
            let bobsPhone = try await TestDevice(
                "bobs-phone", mode: mode, account: "bob", service: service,
                directory: desktop.root.deletingLastPathComponent())
            // The desktop's engine processes for the accounts it signs in as (external mode).
            var engines: [UbiquityProcess] = []
            do {
                try await bobsPhone.start()
                let bobs = UbiquitousKeyValueStore(ubiquity: bobsPhone.ubiquity)
                bobs.set("bob's", forKey: "owner")
                bobs.set(Int64(2), forKey: "bob only")
                await bobs.synchronized()

                // The desktop signs in as Bob.
                let recorder = KeyValueChangeRecorder(store)
                let bob = try await service.signIn(account: "bob", device: "desktop")
                let profile = DeviceProfile(
                    server: service.baseURL, account: "bob", token: bob.token ?? "",
                    device: SavingDevice(id: DeviceID(), name: "desktop"))
                engines += [try await desktop.switchAccount(to: profile, as: "desktop-bob")].compactMap { $0 }
                // At once: none of Alice's values, told as an account change naming them.
                #expect(store.object(forKey: "alice only") == nil)
                #expect(store.string(forKey: "owner") != "alice's")
                #expect(recorder.notified.first?.reason == .accountChange)
                #expect(await eventually { recorder.heard(.accountChange, keys: ["alice only"]) })
                // Then Bob's, and never one of Alice's meanwhile.
                var sawAlice = false
                var bobsArrived = false
                let deadline = ContinuousClock.now + .seconds(30)
                while !bobsArrived, ContinuousClock.now < deadline {
                    sawAlice = sawAlice || store.object(forKey: "alice only") != nil
                    bobsArrived = store.string(forKey: "owner") == "bob's" && store.longLong(forKey: "bob only") == 2
                    if !bobsArrived { try await Task.sleep(for: .milliseconds(20)) }
                }
                #expect(bobsArrived)
                #expect(!sawAlice)
                #expect(UbiquitousKeyValueStore(ubiquity: desktop.ubiquity).longLong(forKey: "bob only") == 2)

                // A write now is Bob's: it reaches his phone, not Alice's laptop.
                store.set("bob's desk", forKey: "desk")
                #expect(await eventually(.seconds(30)) { bobs.string(forKey: "desk") == "bob's desk" })
                alicesLaptop.set("alice's laptop", forKey: "later")
                #expect(await eventually(.seconds(30)) { alicesLaptop.string(forKey: "later") == "alice's laptop" })
                #expect(alicesLaptop.object(forKey: "desk") == nil)

                // Alice again: her values are back (those synced meanwhile too), Bob's are gone.
                for engine in engines { await engine.stop(with: SIGTERM) }
                engines += [try await desktop.switchAccount(to: desktop.profile, as: desktop.name)].compactMap { $0 }
                #expect(store.object(forKey: "bob only") == nil)
                #expect(await eventually { recorder.heard(.accountChange, keys: ["bob only", "alice only"]) })
                #expect(
                    await eventually(.seconds(30)) {
                        store.longLong(forKey: "alice only") == 1 && store.string(forKey: "owner") == "alice's"
                            && store.string(forKey: "later") == "alice's laptop"
                    })
                #expect(store.object(forKey: "desk") == nil)
            } catch {
                await bobsPhone.stop()
                for engine in engines { await engine.stop(with: SIGTERM) }
                throw error
            }
            await bobsPhone.stop()
            for engine in engines { await engine.stop(with: SIGTERM) }
        }
    }

    @Test("Signed out, the store is empty and told so; its writes stay in memory", arguments: EngineMode.allCases)
    func signedOut(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { _, desktop, _ in
            let store = UbiquitousKeyValueStore(ubiquity: desktop.ubiquity)
            store.set("alice's", forKey: "owner")
            await store.synchronized()
            let recorder = KeyValueChangeRecorder(store)
            if let engine = desktop.engine { await engine.stop(with: SIGTERM) }
            await desktop.ubiquity.signOut()
            #expect(store.values.isEmpty)
            #expect(!store.synchronize())
            #expect(await eventually { recorder.heard(.accountChange, keys: ["owner"]) })
            store.set("nobody's", forKey: "owner")
            #expect(store.string(forKey: "owner") == "nobody's")
            await store.synchronized()
        }
    }
}
