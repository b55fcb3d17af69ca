import Foundation
import SyncEngine
import Synchronization
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@Suite("Account identity", .timeLimit(.minutes(5)))
struct AccountTests {
    @Test(
        "Signing in as another account changes the identity token and posts the change; none of the first account's items are visible; signing out empties the identity; signing back in brings the first account's items back",
        arguments: EngineMode.allCases)
    func switchingAccounts(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, service in
            // Alice's list, on both devices.
            try Data("alice's list".utf8).write(to: laptop.documents.appendingPathComponent("Alice.txt"))
            let alicesOnDesktop = desktop.documents.appendingPathComponent("Alice.txt")
            #expect(await eventually { FileManager.default.fileExists(atPath: alicesOnDesktop.path) })
            let aliceToken = try #require(desktop.ubiquity.identityToken)

            // Bob has an item of his own, made on another machine of his.
            let bob = try await service.signIn(account: "bob", device: "bob's phone")
            let bobsPhone = try ContainerSync(
                layout: ContainerLayout(
                    root: laptop.root.deletingLastPathComponent().appendingPathComponent("bob-phone"),
                    container: desktop.container),
                client: bob, device: SavingDevice(id: DeviceID(), name: "bob's phone"))
            try Data("bob's list".utf8).write(
                to: bobsPhone.layout.documents.appendingPathComponent("Bob.txt"))
            try await bobsPhone.syncOnce()

            let changes = Mutex<[UbiquityIdentityToken?]>([])
            let observer = NotificationCenter.default.addObserver(
                forName: .ubiquityIdentityDidChange, object: desktop.ubiquity, queue: nil
            ) { notification in
                let token = (notification.object as? Ubiquity)?.identityToken
                changes.withLock { $0.append(token) }
            }
            defer { NotificationCenter.default.removeObserver(observer) }

            // The desktop signs in as Bob.
            let bobOnDesktop = try await service.signIn(account: "bob", device: "desktop")
            let bobProfile = DeviceProfile(
                server: service.baseURL, account: "bob", token: bobOnDesktop.token ?? "",
                device: SavingDevice(id: DeviceID(), name: "desktop"))
            let bobsEngine = try await desktop.switchAccount(to: bobProfile, as: "desktop-bob")
            defer { if let bobsEngine { Task { await bobsEngine.stop(with: SIGTERM) } } }
            let bobToken = try #require(desktop.ubiquity.identityToken)
            #expect(bobToken != aliceToken)
            #expect(changes.withLock { $0 } == [bobToken])

            let folder = try #require(try await desktop.ubiquity.containerURL(forIdentifier: nil))
            let bobsOnDesktop = folder.appendingPathComponent("Documents/Bob.txt")
            #expect(await eventually { FileManager.default.fileExists(atPath: bobsOnDesktop.path) })
            #expect(try String(contentsOf: bobsOnDesktop, encoding: .utf8) == "bob's list")
            #expect(!FileManager.default.fileExists(atPath: alicesOnDesktop.path))
            #expect(!FileManager.default.isUbiquitousItem(at: alicesOnDesktop))
            let everything = try FileManager.default.subpathsOfDirectory(atPath: folder.path)
            #expect(!everything.contains { $0.contains("Alice") })

            // Signed out: no identity, no container.
            if let bobsEngine { await bobsEngine.stop(with: SIGTERM) }
            await desktop.ubiquity.signOut()
            #expect(desktop.ubiquity.identityToken == nil)
            #expect(try await desktop.ubiquity.containerURL(forIdentifier: nil) == nil)
            #expect(changes.withLock { $0 } == [bobToken, nil])

            // Alice again: her items are back, nothing was lost, and Bob's are not visible.
            let alicesEngine = try await desktop.switchAccount(to: desktop.profile, as: desktop.name)
            defer { if let alicesEngine { Task { await alicesEngine.stop(with: SIGTERM) } } }
            #expect(desktop.ubiquity.identityToken == aliceToken)
            _ = try await desktop.ubiquity.containerURL(forIdentifier: nil)
            #expect(try String(contentsOf: alicesOnDesktop, encoding: .utf8) == "alice's list")
            #expect(!FileManager.default.fileExists(atPath: bobsOnDesktop.path))
            #expect(changes.withLock { $0 } == [bobToken, nil, aliceToken])
            if let alicesEngine { await alicesEngine.stop(with: SIGTERM) }
        }
    }
}

extension TestDevice {
    /// Signs the device in as `profile` (saved as profile `name`); in external mode the running engine process is
    /// stopped first and one for the new account started, as a user would restart `ubiquity sync`.
    func switchAccount(to profile: DeviceProfile, as name: String) async throws -> UbiquityProcess? {
        if let engine { await engine.stop(with: SIGTERM) }
        var next: UbiquityProcess?
        if mode == .external {
            try profile.save(as: name, in: config.appendingPathComponent("ubiquity", isDirectory: true))
            next = try UbiquityProcess(
                ["sync", "--container", container.string, "--profile", name, "--root", root.path],
                environment: ["XDG_CONFIG_HOME": config.path],
                log: root.deletingLastPathComponent().appendingPathComponent(
                    "\(name)-\(UUID().uuidString.prefix(4)).log"))
        }
        await ubiquity.signIn(profile)
        return next
    }
}
