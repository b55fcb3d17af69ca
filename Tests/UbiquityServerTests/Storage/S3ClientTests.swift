import Foundation
import NIOCore
import Testing
import UbiquityProtocol

@testable import UbiquityServer

/// The S3 client and chunk store against a real S3-compatible server (`UBIQUITY_S3_URL`, which `.ci/run` starts:
/// OpenStack Swift's s3api), under a prefix of each test's own. The chunk store's contract is
/// `StorageContractTests`, run against it as the `s3` driver.
@Suite(
    "S3: the client and the chunk store against a live S3-compatible server",
    .disabled(
        if: StorageFixtures.s3URL == nil && !StorageFixtures.isCI,
        "UBIQUITY_S3_URL is unset: no S3-compatible server to test against (.ci/run starts one)"))
struct S3ClientTests {
    private func client(secret: String? = nil) throws -> S3Client {
        var configuration = try S3Client.Configuration(
            url: try #require(StorageFixtures.s3URL, "UBIQUITY_S3_URL names no S3 server (.ci/run starts one)"))
        if let secret { configuration.credentials.secretKey = secret }
        return S3Client(configuration)
    }

    @Test("Objects put, read, sized, listed a page at a time and deleted; keys with spaces and non-ASCII as sent")
    func objectRoundTrip() async throws {
        let client = try client()
        try await client.createBucket()
        try await client.createBucket()  // again: the bucket is this account's already
        let prefix = "tests/client-\(UUID().uuidString.lowercased())/"
        let keys = (0..<5).map { "\(prefix)folder/item \($0) ü+ß" }
        for (index, key) in keys.enumerated() {
            let bytes = ByteBuffer(string: String(repeating: "\(index)", count: index * 10))
            try await client.put(
                key, bytes: bytes, sha256: SignatureV4.payloadHash(of: Array(bytes.readableBytesView)))
        }
        #expect(try await client.get(keys[3]) == ByteBuffer(string: String(repeating: "3", count: 30)))
        #expect(try await client.size(of: keys[4]) == 40)
        #expect(try await client.size(of: keys[0]) == 0)
        #expect(try await client.get(prefix + "missing") == nil)
        #expect(try await client.size(of: prefix + "missing") == nil)

        var listed: [String] = []
        var next: String?
        repeat {
            let page = try await client.list(prefix: prefix, after: next, limit: 2)
            #expect(page.keys.count <= 2)
            listed += page.keys
            next = page.next
        } while next != nil
        #expect(listed == keys.sorted())

        for key in keys { try await client.delete(key) }
        try await client.delete(keys[0])  // already gone: nothing to do
        #expect(try await client.list(prefix: prefix).keys.isEmpty)
    }

    @Test(
        "The server refuses bytes that are not the hash they were sent with, and a request signed with a wrong secret")
    func refusals() async throws {
        let client = try client()
        try await client.createBucket()
        let key = "tests/refusals-\(UUID().uuidString.lowercased())"
        let bytes = ByteBuffer(string: "the bytes")
        await #expect(throws: S3Error.self) {
            try await client.put(key, bytes: bytes, sha256: SignatureV4.payloadHash(of: Array("other bytes".utf8)))
        }
        #expect(try await client.get(key) == nil, "nothing was stored")
        let impostor = try self.client(secret: "not the secret")
        await #expect {
            try await impostor.put(
                key, bytes: bytes, sha256: SignatureV4.payloadHash(of: Array(bytes.readableBytesView)))
        } throws: { error in
            (error as? S3Error)?.status == 403
        }
        #expect(try await client.get(key) == nil)
    }

    @Test("A chunk whose object was changed in the bucket is refused when read, not handed out")
    func corruptObjectIsRefused() async throws {
        let store = S3ChunkStore(client: try client(), prefix: "tests/corrupt-\(UUID().uuidString.lowercased())")
        try await store.client.createBucket()
        let account = AccountID()
        let bytes = Array("a chunk's bytes".utf8)
        let hash = StorageFixtures.sha256(bytes)
        let upload = try await store.beginUpload(for: account)
        try bytes.withUnsafeBytes { try upload.write($0) }
        try await upload.finish(expecting: hash)
        #expect(try await readAll(hash, of: account, from: store, pieceSize: 4) == bytes)

        let spoiled = ByteBuffer(string: "other bytes, same key")
        try await store.client.put(
            store.key(of: hash, of: account), bytes: spoiled,
            sha256: SignatureV4.payloadHash(of: Array(spoiled.readableBytesView)))
        await #expect {
            _ = try await store.read(hash, of: account, pieceSize: 4)
        } throws: { error in
            (error as? ProtocolError)?.code == .internalError
        }
    }
}
