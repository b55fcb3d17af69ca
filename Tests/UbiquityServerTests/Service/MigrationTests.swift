import Foundation
import HummingbirdTesting
import Testing
import UbiquityProtocol
import UbiquityServer

/// `ubiquity server migrate`: an embedded deployment copied to PostgreSQL and S3-compatible storage, against the
/// servers `.ci/run` starts.
@Suite(
    "Service: an embedded deployment migrated to PostgreSQL and S3",
    .enabled(
        if: (StorageFixtures.postgresURL != nil && StorageFixtures.s3URL != nil) || StorageFixtures.isCI,
        "UBIQUITY_POSTGRES_URL or UBIQUITY_S3_URL is unset (.ci/run starts both servers)"))
struct MigrationTests {
    /// What a device knew of the embedded deployment before it moved.
    struct Before: Sendable {
        var token: String
        var info: TokenInfo
        var feed: ChangeToken
        var version: VersionRecord
        var content: [UInt8]
    }

    @Test(
        "devices keep their tokens, feed positions and content; a second run copies nothing again; the target checks out"
    )
    func embeddedToPostgresAndS3() async throws {
        let postgres = try #require(StorageFixtures.postgresURL)
        let s3 = try #require(StorageFixtures.s3URL)
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let database = postgres + "?schema=migrated_\(suffix)&pool=4"
        let chunks = s3 + "&prefix=tests/migrated-\(suffix)"

        // An embedded deployment with an account, a device, items with content, and key-value entries.
        let embedded = try await TestServer.make()
        let before = try await embedded.test(keep: true) { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            let content = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let created = try await laptop.create("Documents/List.txt", content)
            _ = try await laptop.create("Documents/Notes.txt", Array("milk".utf8))
            _ = try await laptop.send(
                .post, laptop.path("kv"),
                json: KeyValueBatch(writes: [KeyValueWrite(key: "theme", value: .string("dark"), timestamp: Date())]))
            let feed = try await laptop.send(.get, laptop.path("changes")).decode(ChangePage.self).nextToken
            return Before(
                token: laptop.token, info: laptop.info, feed: feed, version: try #require(created.version),
                content: content)
        }
        defer { try? FileManager.default.removeItem(at: embedded.directory) }

        let migration = DeploymentMigration(from: embedded.directory, toDatabase: database, toChunks: chunks)
        let first = try await migration.run(verify: true)
        #expect(first.problems.isEmpty, "\(first.problems)")
        #expect(first.chunksCopied > 0 && first.chunksPresent == 0)
        #expect(first.rows["device_token"] == 1 && first.rows["change"] ?? 0 >= 2)
        // Run again, as after an interruption: nothing is sent twice, and everything still checks out.
        let second = try await migration.run()
        #expect(second.problems.isEmpty, "\(second.problems)")
        #expect(second.chunksCopied == 0 && second.chunksPresent == first.chunksCopied)

        // A node on the new storage: the device's token, feed position and content are all still good.
        let node = try await TestServer.make {
            $0.database = database
            $0.chunkStore = chunks
        }
        try await node.test(.live) { client in
            let laptop = Device(
                client: client, token: before.token, info: before.info, container: Device.defaultContainer)
            let page = try await laptop.send(.get, laptop.path("changes?since=\(before.feed)")).decode(
                ChangePage.self)
            #expect(page.changes.isEmpty, "the feed token from before is valid and nothing happened since")
            #expect(try await laptop.download(before.version) == before.content)
            let values = try await laptop.send(.get, laptop.path("kv")).decode(KeyValueChanges.self)
            #expect(values.entries.map(\.key) == ["theme"])
            let more = try await laptop.create("Documents/After.txt", Array("eggs".utf8))
            #expect(more.version != nil)
        }
    }

    @Test("a directory that holds no deployment is refused with a clear error, and nothing is made in it")
    func refusals() async throws {
        let postgres = try #require(StorageFixtures.postgresURL)
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("no-deployment-\(UUID())")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        await #expect {
            _ = try await DeploymentMigration(from: empty, toDatabase: postgres, toChunks: nil).run()
        } throws: { error in
            "\(error)".contains("not a data directory")
        }
        #expect(!FileManager.default.fileExists(atPath: empty.appendingPathComponent("ubiquity.sqlite").path))
    }
}
