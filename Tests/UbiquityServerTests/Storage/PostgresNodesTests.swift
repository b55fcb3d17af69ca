import Foundation
import Testing
import UbiquityProtocol

@testable import UbiquityServer

/// Several nodes on one PostgreSQL database: each test opens two ``PostgresMetadataStore``s (two connection pools,
/// as two `ubiquity server` processes have) on one schema and has them work at once.
@Suite(
    "PostgreSQL: several nodes on one database",
    .enabled(
        if: StorageFixtures.postgresURL != nil || StorageFixtures.isCI,
        "UBIQUITY_POSTGRES_URL names no PostgreSQL server (.ci/run starts one)"))
struct PostgresNodesTests {
    typealias Fixtures = StorageFixtures

    /// Two nodes on a fresh schema of their own.
    private func twoNodes(quota: Int64? = nil) async throws -> (PostgresMetadataStore, PostgresMetadataStore) {
        let schema = "nodes-\(UUID().uuidString)"
        // Both migrate the new schema at once: each version must run once.
        async let first = Fixtures.postgresStore(schema: schema)
        async let second = Fixtures.postgresStore(schema: schema)
        return try await (first, second)
    }

    @Test(
        "an item whose stored version cannot be read fails only the operations on it, not those sharing its transaction"
    )
    func unreadableRowFailsOnlyItsOperation() async throws {
        let store = try await Fixtures.postgresStore(schema: "unreadable-\(UUID().uuidString)")
        let account = try await store.createAccount(name: "ada", passwordHash: "x", quotaBytes: nil)
        let container = ContainerKey(account: account.id, container: Fixtures.container)
        let broken = ItemID()
        let version = VersionRecord(
            id: VersionID(), itemID: broken, manifest: .file([]), contentHash: Fixtures.sha256([]),
            modificationDate: Fixtures.now, savingDevice: Fixtures.laptop)
        _ = try await store.createItem(
            CreateItemRequest(id: broken, path: try ItemPath("Broken.txt"), kind: .file, version: version),
            in: container)
        // As a build that writes records this one cannot read would leave it.
        try await store.write { db in
            try await db.run(
                "UPDATE version SET record = '{\"unreadable\": true}' WHERE version_id = \(version.id.string)")
        }

        let results = await withTaskGroup(of: (Int, Bool).self) { group in
            for index in 0..<24 {
                group.addTask {
                    do {
                        if index == 12 {
                            _ = try await store.moveItem(broken, to: try ItemPath("Moved.txt"), in: container)
                        } else {
                            let request = CreateItemRequest(path: try ItemPath("Notes/\(index).txt"), kind: .file)
                            _ = try await store.createItem(request, in: container)
                        }
                        return (index, true)
                    } catch {
                        return (index, false)
                    }
                }
            }
            var results: [Int: Bool] = [:]
            for await (index, succeeded) in group { results[index] = succeeded }
            return results
        }
        #expect(results[12] == false, "the operation on the unreadable item fails")
        #expect(results.filter { $0.key != 12 && !$0.value }.isEmpty, "every other operation lands")
        #expect(try await store.items(in: container).items.count == 24)
    }

    @Test(
        "two nodes writing one container at once: a reader paging the feed meanwhile gets every change once, in order")
    func feedWithConcurrentWriters() async throws {
        let (one, two) = try await twoNodes()
        let account = try await one.createAccount(name: "ada", passwordHash: "x", quotaBytes: nil)
        let container = ContainerKey(account: account.id, container: Fixtures.container)
        let perNode = 40
        let created = try await withThrowingTaskGroup(of: [ItemID].self) { group in
            for (index, node) in [one, two].enumerated() {
                group.addTask {
                    var ids: [ItemID] = []
                    for item in 0..<perNode {
                        let request = CreateItemRequest(
                            path: try ItemPath("Documents/node\(index)-\(item).txt"), kind: .file)
                        _ = try await node.createItem(request, in: container)
                        ids.append(request.id)
                    }
                    return ids
                }
            }
            // The reader pages while the writers write, alternating nodes, in pages smaller than what arrives.
            group.addTask {
                var seen: [ItemID] = []
                var token: ChangeToken?
                var page = 0
                while seen.count < 2 * perNode {
                    let node = page % 2 == 0 ? one : two
                    let changes = try await node.changes(in: container, since: token, limit: 7)
                    for change in changes.changes {
                        if case .itemCreated(let id, _, _) = change { seen.append(id) }
                    }
                    token = changes.nextToken
                    page += 1
                    if changes.changes.isEmpty { await Task.yield() }
                }
                return seen
            }
            var written: [ItemID] = []
            var read: [ItemID] = []
            for try await ids in group {
                if ids.count == 2 * perNode { read = ids } else { written += ids }
            }
            return (written: written, read: read)
        }
        #expect(created.read.count == 2 * perNode)
        #expect(Set(created.read) == Set(created.written), "every change read, none twice, none lost")
        // The whole feed read again at once is what the reader saw, in the same order.
        let whole = try await two.changes(in: container, since: nil, limit: 1_000).changes.compactMap {
            change -> ItemID? in
            if case .itemCreated(let id, _, _) = change { return id }
            return nil
        }
        #expect(whole == created.read)
    }

    @Test("a quota holds across nodes: chunks added on two nodes at once never take the account over it")
    func quotaAcrossNodes() async throws {
        let (one, two) = try await twoNodes()
        let account = try await one.createAccount(name: "ada", passwordHash: "x", quotaBytes: 100)
        let outcomes = try await withThrowingTaskGroup(of: [ChunkAddition].self) { group in
            for node in [one, two] {
                group.addTask {
                    var outcomes: [ChunkAddition] = []
                    for _ in 0..<10 {
                        let chunk = ChunkReference(hash: Fixtures.randomHash(), size: 10)
                        outcomes += try await node.addChunks([chunk], to: account.id)
                    }
                    return outcomes
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(outcomes.filter { $0 == .added }.count == 10, "ten chunks of 10 bytes fit a 100-byte quota")
        #expect(outcomes.count == 20)
        #expect(try await two.account(id: account.id)?.usedBytes == 100)
    }

    @Test("a database whose schema is newer than this build is refused with a clear error")
    func newerSchemaRefused() async throws {
        let schema = "newer-\(UUID().uuidString)"
        let store = try await Fixtures.postgresStore(schema: schema)
        _ = try await store.account(id: AccountID())
        let newer = PostgresMetadataStore.schemaVersion + 1
        try await store.write { db in try await db.run("INSERT INTO ubiquity_schema (version) VALUES (\(newer))") }
        await #expect {
            _ = try await Fixtures.postgresStore(schema: schema)
        } throws: { error in
            "\(error)".contains("newer than this build")
        }
    }

    @Test("a wrong password, an unknown database, a malformed URL: clear errors, and nothing is created")
    func badConfiguration() async throws {
        let url = try #require(Fixtures.postgresURL)
        let wrongPassword = url.replacingOccurrences(of: ":secret@", with: ":wrong@")
        try #require(wrongPassword != url, "the tests' URL carries the password `secret`")
        await #expect {
            _ = try await PostgresMetadataStore.open(url: wrongPassword)
        } throws: { error in
            "\(error)".contains("password authentication failed") && !"\(error)".contains("wrong")
        }
        let unknownDatabase = url.replacingOccurrences(of: "/ubiquity_tests", with: "/no_such_database")
        await #expect {
            _ = try await PostgresMetadataStore.open(url: unknownDatabase)
        } throws: { error in
            "\(error)".contains("no_such_database")
        }
        for malformed in ["postgres://127.0.0.1/db", "mysql://u@h/db", "postgres://u@h/", url + "?colour=blue"] {
            #expect(throws: PostgresStoreError.self) { _ = try PostgresMetadataStore.Location(url: malformed) }
        }
    }

    @Test(
        "dropping a store's schema removes it and everything in it, and leaves other schemas alone")
    func droppedSchema() async throws {
        let (store, other) = try await (
            Fixtures.postgresStore(schema: "dropped-\(UUID().uuidString)"),
            Fixtures.postgresStore(schema: "kept-\(UUID().uuidString)")
        )
        let account = try await store.createAccount(name: "ada", passwordHash: "x", quotaBytes: nil)
        _ = try await store.createItem(
            CreateItemRequest(path: try ItemPath("Notes.txt"), kind: .file),
            in: ContainerKey(account: account.id, container: Fixtures.container))
        let kept = try await other.createAccount(name: "ada", passwordHash: "x", quotaBytes: nil)
        func schemaExists(_ name: String) async throws -> Bool {
            try await other.read { db in
                try await db.value("SELECT count(*) FROM pg_namespace WHERE nspname = \(name)", as: Int64.self)
            } == 1
        }
        #expect(try await schemaExists(store.schema))

        try await store.dropSchema()
        #expect(try await !schemaExists(store.schema))
        #expect(try await schemaExists(other.schema))
        #expect(try await other.account(id: kept.id) != nil, "the other schema's data is untouched")

        try await other.dropSchema()
    }
}
