import Foundation
import Testing
import UbiquityProtocol
import UbiquityServer

/// The contract every storage driver (a ``MetadataStore`` and a ``ChunkStore``) must pass: what the service, and
/// through it every device, relies on. Each test runs once per ``StorageDriverKind``, on real stores in a fresh
/// temporary directory. The key-value store's part is in `StorageContractTests+KeyValue.swift`.
@Suite("Storage contract: what every metadata and chunk store driver must do")
struct StorageContractTests {
    typealias Fixtures = StorageFixtures

    // MARK: Accounts and tokens

    @Test(
        "accounts: found by name however it is cased or normalised; a name taken in another case is refused",
        arguments: StorageDriverKind.available)
    func accounts(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let store = storage.metadata
            let zoe = try await store.createAccount(name: "Zoë Lovelace", passwordHash: "$2b$12$abc", quotaBytes: 1000)
            #expect(zoe.name == "Zoë Lovelace", "the name is kept as written")
            #expect(zoe.passwordHash == "$2b$12$abc")
            #expect(zoe.quotaBytes == 1000)
            #expect(zoe.usedBytes == 0)
            #expect(zoe.createdAt == Fixtures.now)
            #expect(try await store.account(id: zoe.id) == zoe)
            for spelling in ["Zoë Lovelace", "zoë lovelace", "ZOË LOVELACE", "Zoe\u{308} Lovelace"] {
                #expect(try await store.account(named: spelling) == zoe, "looked up as \(spelling)")
            }
            #expect(try await store.account(named: "Zoe Lovelace") == nil, "an accent is not a case")
            #expect(try await store.account(id: AccountID()) == nil)

            for taken in ["ZOË LOVELACE", "zoe\u{308} lovelace"] {
                await expectError(.accountExists, "\(taken)") {
                    try await store.createAccount(name: taken, passwordHash: "other", quotaBytes: nil)
                }
            }
            #expect(try await store.account(named: "zoë lovelace") == zoe, "the refused attempts changed nothing")

            let grace = try await store.createAccount(name: "Grace", passwordHash: "$2b$12$def", quotaBytes: nil)
            #expect(grace.id != zoe.id)
            #expect(grace.quotaBytes == nil)
            try await store.setQuota(nil, of: zoe.id)
            try await store.setQuota(5000, of: grace.id)
            #expect(try await store.account(id: zoe.id)?.quotaBytes == nil)
            #expect(try await store.account(named: "grace")?.quotaBytes == 5000)
        }
    }

    @Test(
        "device tokens: found by secret hash, listed oldest first per account, revoked only by their own account",
        arguments: StorageDriverKind.available)
    func deviceTokens(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let store = storage.metadata
            let ada = try await store.createAccount(name: "ada", passwordHash: "x", quotaBytes: nil)
            let grace = try await store.createAccount(name: "grace", passwordHash: "y", quotaBytes: nil)
            func token(_ account: AccountID, _ device: String, at seconds: TimeInterval, secret: UInt8)
                -> DeviceTokenRecord
            {
                DeviceTokenRecord(
                    info: TokenInfo(
                        id: UUID(), accountID: account, device: SavingDevice(id: DeviceID(), name: device),
                        containers: secret.isMultiple(of: 2) ? nil : [Fixtures.container],
                        createdAt: Fixtures.date(seconds)),
                    secretHash: Array(repeating: secret, count: 32))
            }
            let phone = token(ada.id, "Ada's phone", at: -20, secret: 1)
            let laptop = token(ada.id, "Ada's laptop", at: -10, secret: 2)
            let gracePhone = token(grace.id, "Grace's phone", at: -30, secret: 3)
            for token in [laptop, gracePhone, phone] { try await store.insertToken(token) }

            #expect(try await store.token(secretHash: phone.secretHash) == phone)
            #expect(try await store.token(secretHash: laptop.secretHash) == laptop)
            #expect(try await store.token(secretHash: Array(repeating: 9, count: 32)) == nil)
            #expect(try await store.tokens(of: ada.id) == [phone, laptop], "oldest first, whatever the order made")
            #expect(try await store.tokens(of: grace.id) == [gracePhone])
            #expect(try await store.tokens(of: AccountID()) == [])

            #expect(
                try await store.revokeToken(phone.info.id, of: grace.id, at: Fixtures.date(1)) == false,
                "another account's token cannot be revoked")
            #expect(try await store.token(secretHash: phone.secretHash) == phone, "and it is left as it was")
            #expect(try await store.revokeToken(UUID(), of: ada.id, at: Fixtures.date(1)) == false)

            #expect(try await store.revokeToken(phone.info.id, of: ada.id, at: Fixtures.date(2)) == true)
            var revoked = phone
            revoked.info.revokedAt = Fixtures.date(2)
            #expect(try await store.token(secretHash: phone.secretHash) == revoked, "found revoked, with the date")
            #expect(try await store.tokens(of: ada.id) == [revoked, laptop])
            #expect(try await store.tokens(of: grace.id) == [gracePhone])
        }
    }

    // MARK: Chunk records and quota

    @Test(
        "chunk records: missing chunks once each in order, each chunk counted once, the quota refuses and keeps usage",
        arguments: StorageDriverKind.available)
    func chunkRecordsAndQuota(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let store = storage.metadata
            let ada = try await StorageScene.make(storage, account: "ada", quotaBytes: 100)
            let grace = try await StorageScene.make(storage, account: "grace")
            let a = ChunkReference(hash: Fixtures.randomHash(), size: 40)
            let b = ChunkReference(hash: Fixtures.randomHash(), size: 30)
            let c = ChunkReference(hash: Fixtures.randomHash(), size: 50)
            let asked = [a, b, a, c, b].map(\.hash)

            #expect(try await store.missingChunks(asked, of: ada.account.id) == [a.hash, b.hash, c.hash])
            #expect(try await store.missingChunks([], of: ada.account.id) == [])
            #expect(try await store.addChunk(b, to: ada.account.id) == true)
            #expect(try await store.missingChunks(asked, of: ada.account.id) == [a.hash, c.hash])
            #expect(try await store.addChunk(b, to: ada.account.id) == false, "a chunk is recorded once")
            #expect(try await ada.storedAccount().usedBytes == 30, "and counted once")
            #expect(try await store.chunkSize(b.hash, of: ada.account.id) == 30)
            #expect(try await store.chunkSize(a.hash, of: ada.account.id) == nil)

            #expect(try await store.addChunk(a, to: ada.account.id) == true)
            #expect(try await ada.storedAccount().usedBytes == 70)
            await expectError(.quotaExceeded, "70 + 50 bytes is over the 100-byte quota") {
                try await store.addChunk(c, to: ada.account.id)
            }
            #expect(try await ada.storedAccount().usedBytes == 70, "a refused chunk is not counted")
            #expect(try await store.missingChunks([c.hash], of: ada.account.id) == [c.hash], "nor recorded")
            #expect(try await store.chunkSize(c.hash, of: ada.account.id) == nil)

            let filling = ChunkReference(hash: Fixtures.randomHash(), size: 30)
            #expect(try await store.addChunk(filling, to: ada.account.id) == true, "reaching the quota exactly is fine")
            #expect(try await ada.storedAccount().usedBytes == 100)

            try await store.setQuota(50, of: ada.account.id)
            #expect(try await ada.storedAccount().usedBytes == 100, "a lower quota keeps what is stored")
            #expect(try await store.chunkSize(a.hash, of: ada.account.id) == 40)
            #expect(try await store.addChunk(a, to: ada.account.id) == false, "a stored chunk is never refused")
            await expectError(.quotaExceeded) {
                try await store.addChunk(ChunkReference(hash: Fixtures.randomHash(), size: 1), to: ada.account.id)
            }
            try await store.setQuota(nil, of: ada.account.id)
            #expect(try await store.addChunk(c, to: ada.account.id) == true, "no quota, no limit")
            #expect(try await ada.storedAccount().usedBytes == 150)

            // Another account has none of them, and pays for its own.
            #expect(try await store.missingChunks(asked, of: grace.account.id) == [a.hash, b.hash, c.hash])
            #expect(try await store.chunkSize(a.hash, of: grace.account.id) == nil)
            #expect(
                try await store.chunkSizes(asked + [filling.hash], of: ada.account.id)
                    == [a.hash: 40, b.hash: 30, c.hash: 50, filling.hash: 30], "sizes asked together, each once")
            #expect(try await store.chunkSizes(asked, of: grace.account.id) == [:])
            #expect(try await store.chunkSizes([], of: ada.account.id) == [:])
            #expect(try await store.addChunk(a, to: grace.account.id) == true)
            #expect(try await grace.storedAccount().usedBytes == 40)
            #expect(try await ada.storedAccount().usedBytes == 150)

            // Several at once, in one transaction and in order: each new one counted once, one the quota has no
            // room for refused alone.
            try await store.setQuota(100, of: grace.account.id)
            let big = ChunkReference(hash: Fixtures.randomHash(), size: 50)
            let small = ChunkReference(hash: Fixtures.randomHash(), size: 10)
            let outcomes = try await store.addChunks([b, a, big, b, small, big], to: grace.account.id)
            #expect(outcomes.count == 6)
            #expect(Array(outcomes.prefix(2)) == [.added, .known])
            if case .refused(let error) = outcomes[2] {
                #expect(error.code == .quotaExceeded)
            } else {
                Issue.record("40 + 30 + 50 bytes is over the 100-byte quota, but \(outcomes[2])")
            }
            #expect(Array(outcomes[3...4]) == [.known, .added], "a chunk that fits still goes")
            if case .refused(let error) = outcomes[5] {
                #expect(error.code == .quotaExceeded)
            } else {
                Issue.record("40 + 30 + 10 + 50 bytes is over the 100-byte quota, but \(outcomes[5])")
            }
            #expect(try await grace.storedAccount().usedBytes == 80)
            #expect(
                try await store.chunkSizes([big.hash, small.hash, b.hash], of: grace.account.id) == [
                    small.hash: 10, b.hash: 30,
                ])
            #expect(try await store.addChunks([], to: grace.account.id) == [])
        }
    }

    // MARK: Chunk bytes

    @Test(
        "chunk bytes: stored only under their own hash, readable byte for byte, by their own account only",
        arguments: StorageDriverKind.chunkDrivers)
    func chunkUploads(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let chunks = storage.chunks
            let ada = AccountID()
            let grace = AccountID()
            let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let hash = Fixtures.sha256(bytes)

            let upload = try await chunks.beginUpload(for: ada)
            for start in stride(from: 0, to: bytes.count, by: 300) {
                try bytes[start..<min(start + 300, bytes.count)].withUnsafeBytes { try upload.write($0) }
            }
            #expect(upload.byteCount == 1000)
            #expect(try await chunks.contains(hash, of: ada) == false, "not a chunk until finished")
            try await upload.finish(expecting: hash)
            // The routes record the chunk with its size as the upload tells it after finishing.
            #expect(upload.byteCount == 1000, "the length received, still told once stored")
            #expect(try await chunks.contains(hash, of: ada))
            #expect(try await chunks.contains(hash, of: grace) == false)
            #expect(try await readAll(hash, of: grace, from: chunks, pieceSize: 64) == nil)
            #expect(try storage.unfinishedUploads() == 0)

            #expect(try await readAll(hash, of: ada, from: chunks, pieceSize: 64) == bytes)

            // Bytes that do not hash to the promised hash are dropped.
            let promised = Array("what was promised".utf8)
            let sent = Array("something else".utf8)
            let wrong = try await chunks.beginUpload(for: ada)
            try sent.withUnsafeBytes { try wrong.write($0) }
            await expectError(.chunkHashMismatch) { try await wrong.finish(expecting: Fixtures.sha256(promised)) }
            #expect(try await chunks.contains(Fixtures.sha256(promised), of: ada) == false)
            #expect(try await chunks.contains(Fixtures.sha256(sent), of: ada) == false)
            #expect(try await readAll(Fixtures.sha256(promised), of: ada, from: chunks, pieceSize: 64) == nil)
            #expect(try storage.unfinishedUploads() == 0, "nothing is left of it")

            // A cancelled upload leaves nothing either.
            let cancelled = try await chunks.beginUpload(for: ada)
            try sent.withUnsafeBytes { try cancelled.write($0) }
            cancelled.cancel()
            #expect(try await chunks.contains(Fixtures.sha256(sent), of: ada) == false)
            #expect(try storage.unfinishedUploads() == 0)

            // The same bytes for another account are that account's own chunk; an empty chunk is a chunk.
            let graceUpload = try await chunks.beginUpload(for: grace)
            try bytes.withUnsafeBytes { try graceUpload.write($0) }
            try await graceUpload.finish(expecting: hash)
            #expect(try await chunks.contains(hash, of: grace))
            let empty = try await chunks.beginUpload(for: grace)
            try await empty.finish(expecting: Fixtures.sha256([]))
            #expect(try await readAll(Fixtures.sha256([]), of: grace, from: chunks, pieceSize: 64) == [])
        }
    }

    @Test(
        "chunk bytes: what an interrupted upload left behind is removed at start-up; finished chunks stay",
        arguments: StorageDriverKind.chunkDrivers)
    func abandonedUploads(driver: StorageDriverKind) async throws {
        try await withTemporaryDirectory { directory in
            let ada = AccountID()
            let kept = Array("kept".utf8)
            let before = try await driver.makeStores(in: directory)
            let finished = try await before.chunks.beginUpload(for: ada)
            try kept.withUnsafeBytes { try finished.write($0) }
            try await finished.finish(expecting: Fixtures.sha256(kept))
            // The service dies in the middle of an upload, larger than a store keeps in memory: it is neither
            // finished nor cancelled.
            let interrupted = try await before.chunks.beginUpload(for: ada)
            try Array(repeating: UInt8(7), count: 2 << 20).withUnsafeBytes { try interrupted.write($0) }
            #expect(try before.unfinishedUploads() == 1)

            let restarted = try await driver.makeStores(in: directory)
            try await restarted.chunks.removeAbandonedUploads()
            #expect(try restarted.unfinishedUploads() == 0)
            #expect(try await restarted.chunks.contains(Fixtures.sha256(kept), of: ada))
            #expect(try await readAll(Fixtures.sha256(kept), of: ada, from: restarted.chunks, pieceSize: 2) == kept)
            withExtendedLifetime(interrupted) {}
        }
    }

    // MARK: Items and versions

    @Test(
        "items: a new item with its first version is current, and the feed tells of the item, the version and the change",
        arguments: StorageDriverKind.available)
    func createAndCommit(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let id = ItemID()
            let path = try ItemPath("Documents/List.grocery")
            let first = scene.version(of: id, try await scene.uploadedContent(sizes: [10, 20]), at: 0, basedOn: nil)
            let created = try await scene.create(path.string, id: id, version: first)
            #expect(created.outcome == .current)
            #expect(created.item == ItemRecord(id: id, path: path, kind: .file, currentVersion: first.id))
            #expect(created.version == first)
            let page = try await scene.metadata.changes(in: scene.container, since: nil, limit: 100)
            #expect(
                page.changes == [
                    .itemCreated(itemID: id, path: path, kind: .file), .versionAdded(itemID: id, versionID: first.id),
                    .itemChanged(itemID: id, currentVersion: first.id),
                ])
            #expect(page.nextToken == created.token, "the response's token is the position after its changes")
            #expect(!page.hasMore)
            #expect(page.versions == [first], "the page carries the new item's small first version")
            #expect(try await scene.detail(id) == ItemDetail(item: created.item, versions: [first]))

            let folder = try await scene.create("Documents/Trips", kind: .directory)
            #expect(folder.outcome == nil)
            #expect(folder.item.currentVersion == nil)
            #expect(
                try await scene.changes(since: created.token).changes == [
                    .itemCreated(itemID: folder.item.id, path: try ItemPath("Documents/Trips"), kind: .directory)
                ])

            let second = scene.version(
                of: id, try await scene.uploadedContent(), at: 60, basedOn: first.id, by: Fixtures.desktop)
            let committed = try await scene.metadata.commit(second, in: scene.container)
            #expect(committed.outcome == .current)
            #expect(committed.item.currentVersion == second.id)
            #expect(committed.version == second)
            #expect(
                try await scene.changes(since: folder.token).changes == [
                    .versionAdded(itemID: id, versionID: second.id),
                    .itemChanged(itemID: id, currentVersion: second.id),
                ])
            #expect(try await scene.detail(id).versions == [second, first], "newest first, history kept")
            #expect(
                try await scene.metadata.items(in: scene.container)
                    == ItemListResponse(items: [committed.item, folder.item], token: committed.token))
        }
    }

    @Test(
        "items: a version whose chunks are not all uploaded is refused, naming exactly the missing ones",
        arguments: StorageDriverKind.available)
    func chunksMissing(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let created = try await scene.createFile("Documents/List.grocery")
            let id = created.item.id
            let present = try await scene.uploadedContent(sizes: [5, 6])
            let missingA = ChunkReference(hash: Fixtures.randomHash(), size: 7)
            let missingB = ChunkReference(hash: Fixtures.randomHash(), size: 8)
            let content = Content(
                chunks: [present.chunks[0], missingA, present.chunks[1], missingB, missingA],
                hash: Fixtures.randomHash())
            let before = try await scene.snapshot()

            let update = scene.version(of: id, content, at: 10, basedOn: created.item.currentVersion)
            let error = await expectError(.chunksMissing) {
                try await scene.metadata.commit(update, in: scene.container)
            }
            #expect(error?.missingChunks == [missingA.hash, missingB.hash])
            let newID = ItemID()
            let refusedCreate = await expectError(.chunksMissing) {
                try await scene.create(
                    "Documents/Other.grocery", id: newID,
                    version: scene.version(of: newID, content, at: 0, basedOn: nil))
            }
            #expect(refusedCreate?.missingChunks == [missingA.hash, missingB.hash])
            #expect(try await scene.metadata.item(newID, in: scene.container) == nil, "the item was not made either")
            #expect(try await scene.snapshot() == before, "nothing changed")

            try await scene.upload([missingA, missingB])
            #expect(try await scene.metadata.commit(update, in: scene.container).outcome == .current)
        }
    }

    @Test(
        "feed: a page carries the records of the small first versions of the items it creates, and no others",
        arguments: StorageDriverKind.available)
    func feedCarriesFirstVersions(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let (small, large) = (ItemID(), ItemID())
            let first = scene.version(of: small, try await scene.uploadedContent(sizes: [10, 20]), at: 0, basedOn: nil)
            let many = Array(repeating: Int64(10), count: 17)
            let big = scene.version(of: large, try await scene.uploadedContent(sizes: many), at: 0, basedOn: nil)
            _ = try await scene.create("Documents/Small.txt", id: small, version: first)
            let made = try await scene.create("Documents/Large.txt", id: large, version: big)
            let both = try await scene.metadata.changes(in: scene.container, since: nil, limit: 100)
            #expect(both.changes.count == 6)
            #expect(both.versions == [first], "not the version of more chunks than a page carries")

            // A later version, and a first version whose item's creation is in an earlier page, are not carried.
            let second = scene.version(of: small, try await scene.uploadedContent(), at: 60, basedOn: first.id)
            _ = try await scene.metadata.commit(second, in: scene.container)
            let later = try await scene.metadata.changes(in: scene.container, since: made.token, limit: 100)
            #expect(later.changes.count == 2)
            #expect(later.versions.isEmpty)
            let split = try await scene.metadata.changes(in: scene.container, since: nil, limit: 1)
            let rest = try await scene.metadata.changes(in: scene.container, since: split.nextToken, limit: 2)
            #expect(split.versions.isEmpty)
            #expect(
                rest.changes == [
                    .versionAdded(itemID: small, versionID: first.id),
                    .itemChanged(itemID: small, currentVersion: first.id),
                ])
            #expect(rest.versions.isEmpty)

            // Read from the start again: the small item's first version is no longer current, so the page that
            // creates it no longer carries it (a device asks, and hears the item as it is now); nor is a first version
            // carried once its item has moved or been deleted.
            let again = try await scene.metadata.changes(in: scene.container, since: nil, limit: 100)
            #expect(again.versions.isEmpty)
            let (moved, deleted) = (ItemID(), ItemID())
            let movedFirst = scene.version(of: moved, try await scene.uploadedContent(), at: 0, basedOn: nil)
            let deletedFirst = scene.version(of: deleted, try await scene.uploadedContent(), at: 0, basedOn: nil)
            try await scene.create("Documents/Moved.txt", id: moved, version: movedFirst)
            try await scene.create("Documents/Deleted.txt", id: deleted, version: deletedFirst)
            let fresh = try await scene.metadata.changes(in: scene.container, since: later.nextToken, limit: 100)
            #expect(fresh.versions == [movedFirst, deletedFirst])
            _ = try await scene.metadata.moveItem(
                moved, to: try ItemPath("Documents/Elsewhere.txt"), in: scene.container)
            _ = try await scene.metadata.deleteItem(deleted, basedOn: deletedFirst.id, in: scene.container)
            let afterwards = try await scene.metadata.changes(in: scene.container, since: later.nextToken, limit: 6)
            #expect(afterwards.changes.count == 6)
            #expect(afterwards.versions.isEmpty)
        }
    }

    @Test(
        "items: a commit's manifest as a delta against a kept version is stored whole; a delta that does not apply is refused and changes nothing",
        arguments: StorageDriverKind.available)
    func deltaCommits(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let large = try await scene.uploadedContent(sizes: Array(repeating: 100, count: 40))
            let id = ItemID()
            let first = scene.version(of: id, large, at: 0, basedOn: nil)
            _ = try await scene.create("Documents/Big.bin", id: id, version: first)
            let inserted = try await scene.uploadedContent(sizes: [7])
            var chunks = large.chunks
            chunks.insert(inserted.chunks[0], at: 20)
            let edit = scene.version(
                of: id, Content(chunks: chunks, hash: Fixtures.randomHash()), at: 10, basedOn: first.id)
            let payload = VersionPayload(edit, against: first)
            #expect(payload.deltaBase == first.id)

            // Against a version the item does not keep, or rebuilding more bytes than it says: refused, no change.
            let before = try await scene.snapshot()
            var stranger = payload
            stranger.content = .delta(ManifestDelta(from: large.chunks, baseID: VersionID(), to: chunks))
            await expectError(.unknownVersion) { try await scene.metadata.commit(stranger, in: scene.container) }
            var oversized = payload
            oversized.size += 1
            await expectError(.invalidRecord) { try await scene.metadata.commit(oversized, in: scene.container) }
            var missing = payload
            let absent = ChunkReference(hash: Fixtures.randomHash(), size: 7)
            missing.content = .delta(ManifestDelta(from: large.chunks, baseID: first.id, to: large.chunks + [absent]))
            missing.size = first.size + 7
            let refused = await expectError(.chunksMissing) {
                try await scene.metadata.commit(missing, in: scene.container)
            }
            #expect(refused?.missingChunks == [absent.hash])
            #expect(try await scene.snapshot() == before, "nothing changed")

            // Applied: stored with its whole manifest; the answer leaves out the version the device sent.
            let committed = try await scene.metadata.commit(payload, in: scene.container)
            #expect(committed.outcome == .current)
            #expect(committed.version == nil)
            #expect(committed.item.currentVersion == edit.id)
            #expect(try await scene.detail(id).versions == [edit, first])
        }
    }

    @Test(
        "conflicts: two commits from the same base keep both; the later date (then the greater id) is current, in any order",
        arguments: StorageDriverKind.available)
    func concurrentCommits(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let content = (0..<3).map { _ in Content.random() }
            let item = ItemID()
            let ids = [VersionID(), VersionID(), VersionID()].sorted()
            // Each race runs in its own account (version ids are unique per account), with the same ids, so the
            // results can be compared whole.
            var races = 0
            func race(_ order: [Int], dates: [TimeInterval]) async throws -> (
                outcomes: [CommitOutcome?], feed: [[Change]], detail: ItemDetail
            ) {
                races += 1
                let scene = try await StorageScene.make(storage, account: "race \(races)")
                try await scene.upload(content.flatMap(\.chunks))
                let base = scene.version(of: item, content[0], at: 0, basedOn: nil, id: ids[0])
                let edits = [
                    scene.version(
                        of: item, content[1], at: dates[0], basedOn: base.id, by: Fixtures.laptop, id: ids[1]),
                    scene.version(
                        of: item, content[2], at: dates[1], basedOn: base.id, by: Fixtures.desktop, id: ids[2]),
                ]
                var token = try await scene.create("Documents/List.grocery", id: item, version: base).token
                var outcomes: [CommitOutcome?] = []
                var feed: [[Change]] = []
                for index in order {
                    let response = try await scene.metadata.commit(edits[index], in: scene.container)
                    outcomes.append(response.outcome)
                    #expect(response.version?.isConflict == (response.outcome == .conflict))
                    feed.append(try await scene.changes(since: token).changes)
                    token = response.token
                }
                return (outcomes, feed, try await scene.detail(item))
            }
            func added(_ index: Int) -> Change { .versionAdded(itemID: item, versionID: ids[index]) }
            func changed(_ index: Int) -> Change { .itemChanged(itemID: item, currentVersion: ids[index]) }

            // Later modification date wins: edit 1 (at 300) over edit 2 (at 200).
            for dates in [[300.0, 200.0], [200.0, 200.0]] {
                // With equal dates, the greater version id wins: ids[2].
                let winner = dates[0] > dates[1] ? 1 : 2
                let loser = 3 - winner
                let winnerFirst = try await race([winner - 1, loser - 1], dates: dates)
                let loserFirst = try await race([loser - 1, winner - 1], dates: dates)
                #expect(winnerFirst.outcomes == [.current, .conflict], "dates \(dates)")
                #expect(winnerFirst.feed == [[added(winner), changed(winner)], [added(loser)]])
                #expect(loserFirst.outcomes == [.current, .current], "dates \(dates)")
                #expect(loserFirst.feed == [[added(loser), changed(loser)], [added(winner), changed(winner)]])

                #expect(winnerFirst.detail == loserFirst.detail, "the same result whatever the order")
                let detail = winnerFirst.detail
                #expect(detail.item.currentVersion == ids[winner])
                let byID = Dictionary(uniqueKeysWithValues: detail.versions.map { ($0.id, $0) })
                #expect(byID.count == 3, "nothing is dropped")
                #expect(byID[ids[winner]]?.isConflict == false)
                #expect(byID[ids[loser]]?.isConflict == true)
                #expect(byID[ids[loser]]?.isResolved == false)
                #expect(byID[ids[0]]?.isConflict == false)
            }
        }
    }

    @Test(
        "identical content is not a new version: no conflict, no feed entry, and a retried commit changes nothing",
        arguments: StorageDriverKind.available)
    func identicalContent(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let id = ItemID()
            let content = try await scene.uploadedContent()
            let first = scene.version(of: id, content, at: 0, basedOn: nil)
            try await scene.create("Documents/List.grocery", id: id, version: first)
            let edit = scene.version(of: id, try await scene.uploadedContent(), at: 10, basedOn: first.id)
            _ = try await scene.metadata.commit(edit, in: scene.container)
            let conflict = scene.version(of: id, try await scene.uploadedContent(), at: 5, basedOn: first.id)
            #expect(try await scene.metadata.commit(conflict, in: scene.container).outcome == .conflict)
            let before = try await scene.snapshot()

            // Same content as the current version, from a stale base: identical, not a conflict.
            let sameAsCurrent = VersionRecord(
                id: VersionID(), itemID: id, manifest: edit.manifest, contentHash: edit.contentHash,
                modificationDate: Fixtures.date(20), savingDevice: Fixtures.desktop, basedOn: first.id)
            let identical = try await scene.metadata.commit(sameAsCurrent, in: scene.container)
            #expect(identical.outcome == .identical)
            #expect(identical.version?.id == edit.id, "the answer names the existing version")
            #expect(identical.item.currentVersion == edit.id)
            #expect(identical.token == before.list.token)
            // Same content as an unresolved conflict version.
            var sameAsConflict = conflict
            sameAsConflict.id = VersionID()
            sameAsConflict.modificationDate = Fixtures.date(30)
            let identicalToConflict = try await scene.metadata.commit(sameAsConflict, in: scene.container)
            #expect(identicalToConflict.outcome == .identical)
            #expect(identicalToConflict.version?.id == conflict.id)
            // The same commit again (a retry after a lost answer).
            let retried = try await scene.metadata.commit(edit, in: scene.container)
            #expect(retried.outcome == .identical)
            #expect(retried.version?.id == edit.id)
            #expect(retried.token == before.list.token)
            #expect(try await scene.snapshot() == before, "no version, no feed entry")
        }
    }

    @Test(
        "deletes: a stale delete is refused naming the current version; a delete leaves a tombstone an edit revives",
        arguments: StorageDriverKind.available)
    func deleteAndRevive(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let created = try await scene.createFile("Documents/List.grocery")
            let id = created.item.id
            let first = try #require(created.version)
            let second = scene.version(of: id, try await scene.uploadedContent(), at: 10, basedOn: first.id)
            _ = try await scene.metadata.commit(second, in: scene.container)
            let before = try await scene.snapshot()

            let stale = await expectError(.staleDelete) {
                try await scene.metadata.deleteItem(id, basedOn: first.id, in: scene.container)
            }
            #expect(stale?.currentVersion == second.id, "the error names the current version")
            await expectError(.staleDelete, "no base is stale too for an item that has versions") {
                try await scene.metadata.deleteItem(id, basedOn: nil, in: scene.container)
            }
            #expect(try await scene.snapshot() == before, "nothing was deleted")

            let deleted = try await scene.metadata.deleteItem(id, basedOn: second.id, in: scene.container)
            #expect(deleted.item.isDeleted)
            #expect(try await scene.changes(since: before.list.token).changes == [.itemDeleted(itemID: id)])
            let tombstone = try await scene.detail(id)
            #expect(tombstone.item.isDeleted)
            #expect(tombstone.versions.map(\.id) == [second.id, first.id], "a tombstone keeps its versions")
            #expect(try await scene.metadata.items(in: scene.container).items == [tombstone.item], "and is listed")
            await expectError(.itemDeleted) {
                try await scene.metadata.moveItem(id, to: try ItemPath("Documents/Moved.grocery"), in: scene.container)
            }

            let third = scene.version(of: id, try await scene.uploadedContent(), at: 20, basedOn: second.id)
            let revived = try await scene.metadata.commit(third, in: scene.container)
            #expect(revived.outcome == .current, "an edit wins over a deletion")
            #expect(revived.item.isDeleted == false)
            #expect(revived.item.currentVersion == third.id)
            #expect(
                try await scene.changes(since: deleted.token).changes == [
                    .versionAdded(itemID: id, versionID: third.id), .itemChanged(itemID: id, currentVersion: third.id),
                ])
            #expect(try await scene.detail(id).item == revived.item)
        }
    }

    @Test(
        "moves: an item keeps its id and versions at its new path, the old path is free, the feed tells of it",
        arguments: StorageDriverKind.available)
    func moves(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let created = try await scene.createFile("Documents/a.txt")
            let id = created.item.id
            let versions = try await scene.detail(id).versions
            let from = try ItemPath("Documents/a.txt")
            let to = try ItemPath("Documents/Trip/b.txt")

            let moved = try await scene.metadata.moveItem(id, to: to, in: scene.container)
            #expect(
                moved.item == ItemRecord(id: id, path: to, kind: .file, currentVersion: created.item.currentVersion))
            #expect(
                try await scene.changes(since: created.token).changes == [.itemMoved(itemID: id, from: from, to: to)])
            #expect(try await scene.detail(id) == ItemDetail(item: moved.item, versions: versions))

            let newcomer = try await scene.createFile("Documents/a.txt")
            #expect(newcomer.item.id != id, "the old path is free")

            let unchanged = try await scene.metadata.moveItem(id, to: to, in: scene.container)
            #expect(unchanged.token == newcomer.token, "a move to where the item is makes no change")

            let recased = try ItemPath("Documents/Trip/B.txt")
            let renamed = try await scene.metadata.moveItem(id, to: recased, in: scene.container)
            #expect(renamed.item.path == recased, "an item may change the case of its own name")
            #expect(
                try await scene.changes(since: newcomer.token).changes == [
                    .itemMoved(itemID: id, from: to, to: recased)
                ])
            await expectError(.itemNotFound) {
                try await scene.metadata.moveItem(ItemID(), to: try ItemPath("Documents/c.txt"), in: scene.container)
            }
        }
    }

    @Test(
        "paths: no item is created or moved onto a live sibling's or a folder's other spelling (case, NFC/NFD)",
        arguments: StorageDriverKind.available)
    func pathCollisions(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            try await scene.create("Documents/Café.txt")
            let onlyInA = try await scene.create("Documents/A/x.txt")
            try await scene.create("Documents/notes")
            let loose = try await scene.create("Documents/loose.txt")
            let before = try await scene.snapshot()

            let refused = [
                "Documents/CAFÉ.txt",  // another case of a live sibling
                "Documents/Cafe\u{301}.txt",  // the same name in NFD
                "Documents/café.txt",
                "documents/other.txt",  // another spelling of the folder every item is in
                "Documents/a/y.txt",  // another spelling of the folder Documents/A
                "Documents/a",  // a file onto another spelling of a folder holding items
                "Documents/A",  // a file onto a folder holding items
                "Documents/notes/inside.txt",  // inside a file
                "Documents/NOTES/inside.txt",
            ]
            for path in refused {
                await expectError(.pathCollision, "create \(path)") {
                    try await scene.create(path)
                }
                await expectError(.pathCollision, "move to \(path)") {
                    try await scene.metadata.moveItem(loose.item.id, to: try ItemPath(path), in: scene.container)
                }
            }
            await expectError(.pathCollision, "a folder item at another spelling of a folder") {
                try await scene.create("Documents/a", kind: .directory)
            }
            #expect(try await scene.snapshot() == before, "nothing changed")

            // Once the only item under Documents/A is gone, the other spelling is free.
            _ = try await scene.metadata.deleteItem(onlyInA.item.id, basedOn: nil, in: scene.container)
            let recased = try await scene.create("Documents/a/y.txt")
            #expect(recased.item.path.string == "Documents/a/y.txt")
            await expectError(.pathCollision, "the folder is now spelled Documents/a") {
                try await scene.create("Documents/A/z.txt")
            }
            let folder = try await scene.create("Documents/a", kind: .directory)
            #expect(folder.item.kind == .directory, "a folder item at the folder's own spelling is fine")
        }
    }

    @Test(
        "resolution: mark resolved, remove a version (never the current one), replace the current; each in the feed",
        arguments: StorageDriverKind.available)
    func resolution(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let store = scene.metadata
            let container = scene.container
            let id = ItemID()
            let base = scene.version(of: id, try await scene.uploadedContent(), at: 0, basedOn: nil)
            let winner = scene.version(of: id, try await scene.uploadedContent(), at: 300, basedOn: base.id)
            let loser = scene.version(
                of: id, try await scene.uploadedContent(), at: 200, basedOn: base.id, by: Fixtures.desktop)
            try await scene.create("Documents/List.grocery", id: id, version: base)
            _ = try await store.commit(winner, in: container)
            #expect(try await store.commit(loser, in: container).outcome == .conflict)
            let before = try await scene.snapshot()

            await expectError(.notAConflict) { try await store.markResolved(winner.id, of: id, in: container) }
            await expectError(.cannotRemoveCurrent) { try await store.removeVersion(winner.id, of: id, in: container) }
            await expectError(.unknownVersion) { try await store.removeVersion(VersionID(), of: id, in: container) }
            await expectError(.unknownVersion) { try await store.markResolved(VersionID(), of: id, in: container) }
            await expectError(.unknownVersion) {
                try await store.replaceCurrent(with: VersionID(), of: id, in: container)
            }
            await expectError(.itemNotFound) { try await store.markResolved(loser.id, of: ItemID(), in: container) }
            #expect(try await scene.snapshot() == before, "the refusals changed nothing")

            let resolved = try await store.markResolved(loser.id, of: id, in: container)
            #expect(
                try await scene.changes(since: before.list.token).changes == [
                    .versionResolved(itemID: id, versionID: loser.id)
                ])
            let marked = try #require(try await scene.detail(id).versions.first { $0.id == loser.id })
            #expect(marked.isConflict && marked.isResolved)
            #expect(resolved.item.currentVersion == winner.id)

            _ = try await store.removeVersion(loser.id, of: id, in: container)
            #expect(
                try await scene.changes(since: resolved.token).changes == [
                    .versionRemoved(itemID: id, versionID: loser.id)
                ])
            #expect(try await scene.detail(id).versions.map(\.id) == [winner.id, base.id])

            // Another conflict, resolved by making it current.
            let late = scene.version(of: id, try await scene.uploadedContent(), at: 100, basedOn: base.id)
            let conflict = try await store.commit(late, in: container)
            #expect(conflict.outcome == .conflict)
            let replaced = try await store.replaceCurrent(with: late.id, of: id, in: container)
            #expect(replaced.item.currentVersion == late.id)
            #expect(
                try await scene.changes(since: conflict.token).changes == [
                    .versionResolved(itemID: id, versionID: late.id), .itemChanged(itemID: id, currentVersion: late.id),
                ])
            let versions = Dictionary(uniqueKeysWithValues: try await scene.detail(id).versions.map { ($0.id, $0) })
            #expect(versions[late.id]?.isConflict == false, "a conflict version made current is no longer one")
            #expect(versions[winner.id] != nil, "the replaced version is kept")
            #expect(versions.count == 3)

            // An old version made current again.
            let restored = try await store.replaceCurrent(with: base.id, of: id, in: container)
            #expect(
                try await scene.changes(since: replaced.token).changes == [
                    .itemChanged(itemID: id, currentVersion: base.id)
                ])
            #expect(try await scene.detail(id).item.currentVersion == base.id)
            _ = try await store.removeVersion(late.id, of: id, in: container)
            #expect(
                try await scene.changes(since: restored.token).changes == [
                    .versionRemoved(itemID: id, versionID: late.id)
                ])
            #expect(try await scene.detail(id).versions.map(\.id) == [winner.id, base.id])
        }
    }

    @Test(
        "records: content of the wrong kind, a reused version id with other content, a retried create",
        arguments: StorageDriverKind.available)
    func recordRules(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let store = scene.metadata
            let id = ItemID()
            let content = try await scene.uploadedContent()
            let first = scene.version(of: id, content, at: 0, basedOn: nil)
            let request = CreateItemRequest(
                id: id, path: try ItemPath("Documents/List.grocery"), kind: .file, version: first)
            let created = try await store.createItem(request, in: scene.container)
            let before = try await scene.snapshot()

            // A retried create (same id, path and kind) is the same create.
            let retried = try await store.createItem(request, in: scene.container)
            #expect(retried.item == created.item)
            #expect(retried.outcome == .identical)
            #expect(retried.version == first)
            #expect(retried.token == created.token)
            var withoutVersion = request
            withoutVersion.version = nil
            #expect(try await store.createItem(withoutVersion, in: scene.container).item == created.item)
            var elsewhere = request
            elsewhere.path = try ItemPath("Documents/Elsewhere.grocery")
            await expectError(.itemExists) { try await store.createItem(elsewhere, in: scene.container) }
            var otherKind = withoutVersion
            otherKind.kind = .directory
            await expectError(.itemExists) { try await store.createItem(otherKind, in: scene.container) }

            // A package manifest for a file, content for a folder.
            func package(of item: ItemID, basedOn: VersionID?) -> VersionRecord {
                VersionRecord(
                    id: VersionID(), itemID: item,
                    manifest: .package([
                        PackageEntry(path: try! ItemPath("Contents"), kind: .directory),
                        PackageEntry(path: try! ItemPath("Contents/list.json"), kind: .file, chunks: content.chunks),
                    ]), contentHash: Fixtures.randomHash(), modificationDate: Fixtures.date(10),
                    savingDevice: Fixtures.laptop, basedOn: basedOn)
            }
            await expectError(.kindMismatch) {
                try await store.commit(package(of: id, basedOn: first.id), in: scene.container)
            }
            let fileID = ItemID()
            await expectError(.kindMismatch) {
                try await scene.create("Documents/New.txt", id: fileID, version: package(of: fileID, basedOn: nil))
            }
            let folderID = ItemID()
            await expectError(.kindMismatch) {
                try await scene.create(
                    "Documents/Folder", kind: .directory, id: folderID,
                    version: scene.version(of: folderID, content, at: 0, basedOn: nil))
            }

            // A version id already used, with other content.
            let reused = scene.version(
                of: id, try await scene.uploadedContent(), at: 20, basedOn: first.id, id: first.id)
            await expectError(.versionExists) { try await store.commit(reused, in: scene.container) }
            let otherID = ItemID()
            await expectError(.versionExists, "a version id is not reused for another item either") {
                try await scene.create(
                    "Documents/Other.grocery", id: otherID,
                    version: scene.version(
                        of: otherID, try await scene.uploadedContent(), at: 0, basedOn: nil, id: first.id))
            }
            #expect(try await scene.snapshot() == before, "nothing changed")

            // A package item takes a package manifest.
            let packageID = ItemID()
            let packaged = try await scene.create(
                "Documents/Trip.grocerypkg", kind: .package, id: packageID,
                version: package(of: packageID, basedOn: nil))
            #expect(packaged.outcome == .current)
        }
    }

    @Test(
        "isolation: another account's container with the same id, and another container, see nothing of an item",
        arguments: StorageDriverKind.available)
    func containerIsolation(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let ada = try await StorageScene.make(storage, account: "ada")
            let grace = try await StorageScene.make(storage, account: "grace")
            #expect(ada.container.container == grace.container.container)
            let created = try await ada.createFile("Documents/List.grocery")
            let id = created.item.id
            let first = try #require(created.version)
            let adaBefore = try await ada.snapshot()

            for (scene, container) in [(grace, grace.container), (ada, try ada.container("TEAM.com.example.other"))] {
                let store = scene.metadata
                #expect(try await store.item(id, in: container) == nil)
                #expect(try await store.items(in: container).items == [])
                #expect(try await scene.changes(in: container).changes == [])
                let edit = scene.version(of: id, try await scene.uploadedContent(), at: 10, basedOn: first.id)
                await expectError(.itemNotFound) { try await store.commit(edit, in: container) }
                await expectError(.itemNotFound) {
                    try await store.moveItem(id, to: try ItemPath("Documents/Stolen.grocery"), in: container)
                }
                await expectError(.itemNotFound) { try await store.deleteItem(id, basedOn: first.id, in: container) }
                await expectError(.itemNotFound) {
                    try await store.replaceCurrent(with: first.id, of: id, in: container)
                }
                await expectError(.itemNotFound) { try await store.removeVersion(first.id, of: id, in: container) }
            }
            // Grace's container is her own: the same path is free in it, and its feed is its own.
            let hers = try await grace.createFile("Documents/List.grocery")
            #expect(hers.item.id != id)
            #expect(try await grace.changes().changes.map(\.itemID) == Array(repeating: hers.item.id, count: 3))
            // Grace does not have Ada's chunks.
            #expect(
                try await grace.metadata.missingChunks(first.manifest.chunks.map(\.hash), of: grace.account.id)
                    == first.manifest.chunks.map(\.hash))
            #expect(try await ada.snapshot() == adaBefore, "Ada's container is untouched")
        }
    }

    @Test(
        "retention: history beyond the count, or older than the age, is removed with a feed entry; conflicts are kept",
        arguments: StorageDriverKind.available)
    func retention(driver: StorageDriverKind) async throws {
        try await withTemporaryDirectory { directory in
            let counted = directory.appendingPathComponent("counted", isDirectory: true)
            let aged = directory.appendingPathComponent("aged", isDirectory: true)
            for folder in [counted, aged] {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
            }

            let storage = try await driver.makeStores(
                in: counted, retention: VersionRetention(maximumCount: 2, maximumAge: nil))
            let scene = try await StorageScene.make(storage)
            let id = ItemID()
            var versions: [VersionRecord] = []
            var response = try await scene.create(
                "Documents/List.grocery", id: id,
                version: scene.version(of: id, try await scene.uploadedContent(), at: 0, basedOn: nil))
            versions.append(try #require(response.version))
            func edit(at seconds: TimeInterval, basedOn: VersionID?) async throws -> (VersionRecord, ItemResponse) {
                let version = scene.version(of: id, try await scene.uploadedContent(), at: seconds, basedOn: basedOn)
                return (version, try await scene.metadata.commit(version, in: scene.container))
            }
            for seconds in [10.0, 20.0] {
                let (version, committed) = try await edit(at: seconds, basedOn: versions.last!.id)
                versions.append(version)
                response = committed
            }
            #expect(try await scene.detail(id).versions.count == 3, "two history versions are kept")

            var token = response.token
            let (v3, _) = try await edit(at: 30, basedOn: versions[2].id)
            #expect(
                try await scene.changes(since: token).changes == [
                    .versionAdded(itemID: id, versionID: v3.id), .itemChanged(itemID: id, currentVersion: v3.id),
                    .versionRemoved(itemID: id, versionID: versions[0].id),
                ])
            #expect(try await scene.detail(id).versions.map(\.id) == [v3.id, versions[2].id, versions[1].id])

            // An unresolved conflict version is not history: it is kept whatever its age or number.
            let (conflict, conflicted) = try await edit(at: 5, basedOn: versions[0].id)
            #expect(conflicted.outcome == .conflict)
            token = conflicted.token
            let (v4, _) = try await edit(at: 40, basedOn: v3.id)
            #expect(
                try await scene.changes(since: token).changes == [
                    .versionAdded(itemID: id, versionID: v4.id), .itemChanged(itemID: id, currentVersion: v4.id),
                    .versionRemoved(itemID: id, versionID: versions[1].id),
                ])
            #expect(
                try await scene.detail(id).versions.map(\.id) == [v4.id, v3.id, versions[2].id, conflict.id])

            // Resolved, it is history, and goes with the next commit.
            let resolved = try await scene.metadata.markResolved(conflict.id, of: id, in: scene.container)
            let (v5, _) = try await edit(at: 50, basedOn: v4.id)
            let pruned = try await scene.changes(since: resolved.token).changes
            #expect(
                pruned.prefix(2) == [
                    .versionAdded(itemID: id, versionID: v5.id), .itemChanged(itemID: id, currentVersion: v5.id),
                ])
            #expect(
                Set(pruned.dropFirst(2)) == [
                    .versionRemoved(itemID: id, versionID: versions[2].id),
                    .versionRemoved(itemID: id, versionID: conflict.id),
                ])
            #expect(pruned.count == 4)
            #expect(try await scene.detail(id).versions.map(\.id) == [v5.id, v4.id, v3.id])

            // By age: a history version modified more than an hour before the clock goes.
            let ageing = try await driver.makeStores(
                in: aged, retention: VersionRetention(maximumCount: 50, maximumAge: 3600))
            let old = try await StorageScene.make(ageing)
            let oldID = ItemID()
            let ancient = old.version(of: oldID, try await old.uploadedContent(), at: -7200, basedOn: nil)
            let recent = old.version(of: oldID, try await old.uploadedContent(), at: -60, basedOn: ancient.id)
            let created = try await old.create("Documents/Old.txt", id: oldID, version: ancient)
            #expect(try await old.detail(oldID).versions == [ancient], "a current version is never too old")
            let committed = try await old.metadata.commit(recent, in: old.container)
            #expect(committed.outcome == .current)
            #expect(
                try await old.changes(since: created.token).changes == [
                    .versionAdded(itemID: oldID, versionID: recent.id),
                    .itemChanged(itemID: oldID, currentVersion: recent.id),
                    .versionRemoved(itemID: oldID, versionID: ancient.id),
                ])
            #expect(try await old.detail(oldID).versions.map(\.id) == [recent.id])
        }
    }

    // MARK: Change feed

    @Test(
        "feed: pages of any size chain by their tokens and give every change once, in order",
        arguments: StorageDriverKind.available)
    func feedPaging(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let scene = try await StorageScene.make(storage)
            let a = try await scene.createFile("Documents/a.txt")
            try await scene.createFile("Documents/b.txt")
            try await scene.create("Documents/Folder", kind: .directory)
            _ = try await scene.metadata.moveItem(
                a.item.id, to: try ItemPath("Documents/Folder/a.txt"), in: scene.container)
            let last = try await scene.metadata.deleteItem(
                a.item.id, basedOn: a.item.currentVersion, in: scene.container)

            let all = try await scene.metadata.changes(in: scene.container, since: nil, limit: 1000)
            #expect(all.changes.count == 9)
            #expect(!all.hasMore)
            #expect(all.nextToken == last.token)
            #expect(try await scene.metadata.items(in: scene.container).token == last.token)

            for limit in [1, 2, 4, 9, 10] {
                var collected: [Change] = []
                var token: ChangeToken? = nil
                var pages = 0
                while true {
                    let page = try await scene.metadata.changes(in: scene.container, since: token, limit: limit)
                    pages += 1
                    #expect(page.changes.count <= limit)
                    collected += page.changes
                    token = page.nextToken
                    #expect(page.hasMore == (collected.count < all.changes.count), "limit \(limit), page \(pages)")
                    if !page.hasMore || pages > 20 { break }
                }
                #expect(collected == all.changes, "limit \(limit)")
                #expect(token == all.nextToken)
                #expect(pages == max(1, (all.changes.count + limit - 1) / limit))
            }

            // At the end: an empty page, the same token; a token from the middle reads the same rest again.
            let end = try await scene.metadata.changes(in: scene.container, since: last.token, limit: 10)
            #expect(end == ChangePage(changes: [], nextToken: last.token, hasMore: false))
            let middle = try await scene.metadata.changes(in: scene.container, since: nil, limit: 4).nextToken
            for _ in 0..<2 {
                #expect(
                    try await scene.metadata.changes(in: scene.container, since: middle, limit: 100).changes
                        == Array(all.changes.dropFirst(4)))
            }
        }
    }

    @Test(
        "feed: a token stays valid when the store is closed and opened again",
        arguments: StorageDriverKind.available)
    func feedTokenSurvivesReopening(driver: StorageDriverKind) async throws {
        try await withTemporaryDirectory { directory in
            let token: ChangeToken
            let created: ItemResponse
            do {
                let scene = try await StorageScene.make(try await driver.makeStores(in: directory))
                created = try await scene.createFile("Documents/List.grocery")
                token = created.token
            }
            let storage = try await driver.makeStores(in: directory)
            let account = try #require(try await storage.metadata.account(named: "ada"))
            let scene = StorageScene(
                storage: storage, account: account,
                container: ContainerKey(account: account.id, container: Fixtures.container))
            #expect(try await scene.metadata.changes(in: scene.container, since: token, limit: 10).changes == [])
            let id = created.item.id
            let edit = scene.version(
                of: id, try await scene.uploadedContent(), at: 10, basedOn: created.item.currentVersion)
            _ = try await scene.metadata.commit(edit, in: scene.container)
            #expect(
                try await scene.changes(since: token).changes == [
                    .versionAdded(itemID: id, versionID: edit.id), .itemChanged(itemID: id, currentVersion: edit.id),
                ])
            #expect(try await scene.changes().changes.count == 5)
            #expect(
                try await scene.detail(id).versions.map(\.id) == [edit.id, try #require(created.item.currentVersion)])
        }
    }

    @Test(
        "feed: a malformed token, another container's, another account's, one past the end, or a key-value token expires",
        arguments: StorageDriverKind.available)
    func invalidFeedTokens(driver: StorageDriverKind) async throws {
        try await driver.withStores { storage in
            let ada = try await StorageScene.make(storage, account: "ada")
            let grace = try await StorageScene.make(storage, account: "grace")
            let other = try ada.container("TEAM.com.example.other")
            let early = try await ada.createFile("Documents/a.txt")
            let otherContainer = try await ada.create("Documents/x", kind: .directory, in: other)
            try await ada.createFile("Documents/b.txt")
            let end = try await ada.createFile("Documents/c.txt").token
            let graces = try await grace.createFile("Documents/a.txt").token
            let keyValue = try await ada.metadata.applyKeyValues(
                [KeyValueWrite(key: "theme", value: .string("dark"), timestamp: Fixtures.now)],
                from: DeviceID(), in: ada.container, limits: .apple
            ).token

            // Every token below names a position the container has (3 or fewer), so only its origin is wrong.
            let refused: [(String, ChangeToken)] = [
                ("malformed", ChangeToken("not a token")),
                ("empty", ChangeToken("")),
                ("another container's", otherContainer.token),
                ("another account's container with the same id", graces),
                ("a key-value token", keyValue),
                ("past the end", try advanced(end, by: 1)),
                ("far past the end", try advanced(end, by: 1_000_000)),
            ]
            for (what, token) in refused {
                await expectError(.changeTokenExpired, "\(what): \(token)") {
                    try await ada.metadata.changes(in: ada.container, since: token, limit: 10)
                }
            }
            // The tokens the container gave stay good.
            #expect(
                try await ada.metadata.changes(in: ada.container, since: early.token, limit: 100).changes.count == 6)
            #expect(try await ada.metadata.changes(in: ada.container, since: end, limit: 100).changes == [])
        }
    }

    @Test(
        "feed: a limit larger than the feed, even Int.max, gives every change",
        arguments: StorageDriverKind.available)
    func unboundedPageLimit(driver: StorageDriverKind) async throws {
        // In a child process, since a driver that fails this may crash; the directory is this process's, so it is
        // removed even then.
        try await withTemporaryDirectory { directory in
            _ = await #expect(processExitsWith: .success) { [driver, directory = directory as URL] in
                let scene = try await StorageScene.make(try await driver.makeStores(in: directory))
                try await scene.createFile("Documents/List.grocery")
                let page = try await scene.metadata.changes(in: scene.container, since: nil, limit: .max)
                guard page.changes.count == 3, !page.hasMore else { exit(1) }
            }
        }
    }
}
