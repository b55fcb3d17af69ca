import Foundation
import Testing
import UbiquityProtocol
import UbiquityServer

/// The key-value store's part of the storage contract.
extension StorageContractTests {
    /// The container's whole store (tombstones left out), by key.
    private func values(_ scene: StorageScene, in container: ContainerKey? = nil) async throws -> [String:
        KeyValueEntry]
    {
        let entries = try await scene.metadata.keyValues(in: container ?? scene.container, since: nil).entries
        return Dictionary(uniqueKeysWithValues: entries.map { ($0.key, $0) })
    }

    private func write(_ key: String, _ value: PropertyListValue?, at seconds: TimeInterval) -> KeyValueWrite {
        KeyValueWrite(key: key, value: value, timestamp: Fixtures.date(seconds))
    }

    @Test(
        "key-value: the later write of a key wins across devices (equal times: the greater device), in any order",
        arguments: StorageDriverKind.available)
    func keyValueLastWriterWins(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let phone = DeviceID()
            let laptop = DeviceID()
            let greater = max(phone, laptop)
            let fromPhone = [
                write("theme", .string("dark"), at: 10), write("sort", .string("name"), at: 10),
                write("zoom", .integer(2), at: 10), write("tie", .string("phone"), at: 40),
            ]
            let fromLaptop = [
                write("theme", .string("light"), at: 5), write("sort", .string("date"), at: 20),
                write("zoom", nil, at: 30), write("tie", .string("laptop"), at: 40),
                write("sort", .string("size"), at: 15),  // an earlier write of the same batch loses too
            ]
            let phoneFirst = try scene.container("TEAM.com.example.phone-first")
            let laptopFirst = try scene.container("TEAM.com.example.laptop-first")
            let store = scene.metadata

            let phoneAlone = try await store.applyKeyValues(fromPhone, from: phone, in: phoneFirst, limits: .apple)
            #expect(phoneAlone.changedKeys == ["sort", "theme", "tie", "zoom"])
            let laptopAfter = try await store.applyKeyValues(fromLaptop, from: laptop, in: phoneFirst, limits: .apple)
            #expect(laptopAfter.changedKeys == (greater == laptop ? ["sort", "tie", "zoom"] : ["sort", "zoom"]))

            let laptopAlone = try await store.applyKeyValues(fromLaptop, from: laptop, in: laptopFirst, limits: .apple)
            #expect(laptopAlone.changedKeys == ["sort", "theme", "tie"], "removing an absent key changes nothing")
            let phoneAfter = try await store.applyKeyValues(fromPhone, from: phone, in: laptopFirst, limits: .apple)
            #expect(phoneAfter.changedKeys == (greater == phone ? ["theme", "tie"] : ["theme"]))

            let expected: [String: KeyValueEntry] = [
                "theme": KeyValueEntry(
                    key: "theme", value: .string("dark"), timestamp: Fixtures.date(10), device: phone),
                "sort": KeyValueEntry(
                    key: "sort", value: .string("date"), timestamp: Fixtures.date(20), device: laptop),
                "tie": KeyValueEntry(
                    key: "tie", value: .string(greater == phone ? "phone" : "laptop"), timestamp: Fixtures.date(40),
                    device: greater),
            ]
            #expect(try await values(scene, in: phoneFirst) == expected)
            #expect(try await values(scene, in: laptopFirst) == expected, "the same store whatever the order")
            #expect(try await values(scene) == [:], "another container's store is its own")
        }
    }

    @Test(
        "key-value: a remove is a tombstone, reported in the changes since a token but not in the whole store",
        arguments: StorageDriverKind.available)
    func keyValueTombstones(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let store = scene.metadata
            let phone = DeviceID()
            let laptop = DeviceID()
            let empty = try await store.keyValues(in: scene.container, since: nil)
            #expect(empty.entries == [])

            let first = try await store.applyKeyValues(
                [write("a", .integer(1), at: 10), write("b", .bool(true), at: 10)], from: phone, in: scene.container,
                limits: .apple)
            #expect(
                try await store.keyValues(in: scene.container, since: empty.token).entries.map(\.key) == ["a", "b"])
            let removed = try await store.applyKeyValues(
                [write("a", nil, at: 20)], from: laptop, in: scene.container, limits: .apple)
            #expect(removed.changedKeys == ["a"])

            let whole = try await store.keyValues(in: scene.container, since: nil)
            #expect(
                whole.entries == [
                    KeyValueEntry(key: "b", value: .bool(true), timestamp: Fixtures.date(10), device: phone)
                ])
            #expect(whole.token == removed.token)
            let since = try await store.keyValues(in: scene.container, since: first.token)
            #expect(
                since.entries == [KeyValueEntry(key: "a", value: nil, timestamp: Fixtures.date(20), device: laptop)])
            #expect(since.token == removed.token)
            #expect(try await store.keyValues(in: scene.container, since: removed.token).entries == [])

            // An older put arriving later does not bring the key back; a newer one does.
            let stale = try await store.applyKeyValues(
                [write("a", .integer(3), at: 15)], from: phone, in: scene.container, limits: .apple)
            #expect(stale.changedKeys == [])
            #expect(stale.token == removed.token, "a write that loses is not applied")
            #expect(try await store.keyValues(in: scene.container, since: nil) == whole)
            let revived = try await store.applyKeyValues(
                [write("a", .integer(4), at: 25)], from: phone, in: scene.container, limits: .apple)
            #expect(revived.changedKeys == ["a"])
            #expect(
                try await store.keyValues(in: scene.container, since: removed.token).entries == [
                    KeyValueEntry(key: "a", value: .integer(4), timestamp: Fixtures.date(25), device: phone)
                ])
        }
    }

    @Test(
        "key-value: a batch that would break a limit is refused whole and changes nothing",
        arguments: StorageDriverKind.available)
    func keyValueLimits(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let store = scene.metadata
            let device = DeviceID()
            let limits = KeyValueLimits(maximumTotalBytes: 200, maximumKeyCount: 3, maximumKeyBytes: 8)
            let applied = try await store.applyKeyValues(
                [write("one", .integer(1), at: 10), write("two", .integer(2), at: 10)], from: device,
                in: scene.container, limits: limits)
            let before = try await store.keyValues(in: scene.container, since: nil)

            let refused: [(ProtocolError.Code, [KeyValueWrite])] = [
                (.keyValueTooManyKeys, [write("three", .integer(3), at: 20), write("four", .integer(4), at: 20)]),
                (
                    .keyValueKeyTooLong,
                    [write("one", .integer(11), at: 20), write("much-too-long", .integer(5), at: 20)]
                ),
                (.keyValueKeyTooLong, [write("", .integer(5), at: 20)]),
                (
                    .keyValueStoreTooLarge,
                    [write("one", nil, at: 20), write("big", .string(String(repeating: "x", count: 300)), at: 20)]
                ),
            ]
            for (code, batch) in refused {
                await expectError(code, "\(batch.map(\.key))") {
                    try await store.applyKeyValues(batch, from: device, in: scene.container, limits: limits)
                }
                #expect(try await store.keyValues(in: scene.container, since: nil) == before, "nothing of it applied")
                #expect(try await store.keyValues(in: scene.container, since: applied.token).entries == [])
            }

            // Within the limits as a whole: the remove makes room for the new key.
            let fits = try await store.applyKeyValues(
                [write("one", nil, at: 30), write("three", .integer(3), at: 30), write("four", .integer(4), at: 30)],
                from: device, in: scene.container, limits: limits)
            #expect(fits.changedKeys == ["four", "one", "three"])
            #expect(try await values(scene).keys.sorted() == ["four", "three", "two"])
        }
    }

    @Test(
        "key-value: a token survives reopening; another feed's, container's or account's token, or one past the end, expires",
        arguments: StorageDriverKind.available)
    func keyValueTokens(driver: StorageDriverKind) async throws {
        try await withTemporaryDirectory { directory in
            let device = DeviceID()
            let token: ChangeToken
            do {
                let scene = try await StorageScene.make(try await driver.makeStores(in: directory))
                token = try await scene.metadata.applyKeyValues(
                    [write("theme", .string("dark"), at: 10)], from: device, in: scene.container, limits: .apple
                ).token
            }
            let storage = try await driver.makeStores(in: directory)
            let account = try #require(try await storage.metadata.account(named: "ada"))
            let scene = StorageScene(
                storage: storage, account: account,
                container: ContainerKey(account: account.id, container: Fixtures.container))
            let store = scene.metadata
            #expect(try await store.keyValues(in: scene.container, since: token).entries == [])
            let latest = try await store.applyKeyValues(
                [write("sort", .string("name"), at: 20)], from: device, in: scene.container, limits: .apple
            ).token
            #expect(try await store.keyValues(in: scene.container, since: token).entries.map(\.key) == ["sort"])
            #expect(try await values(scene).keys.sorted() == ["sort", "theme"])

            let other = try scene.container("TEAM.com.example.other")
            let otherToken = try await store.applyKeyValues(
                [write("x", .integer(1), at: 0)], from: device, in: other, limits: .apple
            ).token
            let grace = try await StorageScene.make(storage, account: "grace")
            let graceToken = try await grace.metadata.applyKeyValues(
                [write("x", .integer(1), at: 0)], from: device, in: grace.container, limits: .apple
            ).token
            let feedToken = try await scene.create("Documents/Folder", kind: .directory).token

            // Every token below names a position the store has (2 or fewer), so only its origin is wrong.
            let refused: [(String, ChangeToken)] = [
                ("malformed", ChangeToken("k1")),
                ("a change-feed token", feedToken),
                ("another container's", otherToken),
                ("another account's container with the same id", graceToken),
                ("past the end", try advanced(latest, by: 1)),
            ]
            for (what, token) in refused {
                await expectError(.changeTokenExpired, "\(what): \(token)") {
                    try await store.keyValues(in: scene.container, since: token)
                }
            }
            await expectError(.changeTokenExpired, "a key-value token on the change feed") {
                try await store.changes(in: scene.container, since: latest, limit: 10)
            }
        }
    }
}
