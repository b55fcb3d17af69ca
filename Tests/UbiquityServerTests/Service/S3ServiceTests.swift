import Foundation
import Testing
import UbiquityProtocol

@testable import UbiquityServer

/// The service with its chunks in S3-compatible object storage (`chunkStore`, `ubiquity server --chunks`), over
/// loopback against the server `.ci/run` starts.
@Suite(
    "Service: chunks kept in S3-compatible object storage",
    .disabled(
        if: StorageFixtures.s3URL == nil && !StorageFixtures.isCI,
        "UBIQUITY_S3_URL is unset: no S3-compatible server to test against (.ci/run starts one)"))
struct S3ServiceTests {
    @Test(
        "A version uploaded by one device is downloaded by another; its chunks are objects under the account's prefix")
    func versionsTravelThroughTheBucket() async throws {
        let url = try #require(StorageFixtures.s3URL, "UBIQUITY_S3_URL names no S3 server (.ci/run starts one)")
        let prefix = "tests/service-\(UUID().uuidString.lowercased())"
        let server = try await TestServer.make { $0.chunkStore = url + "&prefix=\(prefix)" }
        let bucket = S3Client(try S3Client.Configuration(url: url))
        let directory = server.directory
        try await server.test(.live) { client in
            let laptop = try await Device.signIn(client, account: "ada", device: "laptop")
            let desktop = try await Device.signIn(client, account: "ada", device: "desktop")
            let content = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
            let created = try await laptop.create("Documents/List.txt", content)
            let version = try #require(created.version)
            #expect(try await desktop.download(version) == content)

            // Each of the three chunks is an object of its own under Ada's prefix, and none is in the data folder.
            let keys = try await bucket.list(prefix: "\(prefix)/accounts/\(laptop.info.accountID)/chunks/").keys
            #expect(
                Set(keys.map { String($0.split(separator: "/").last!) })
                    == Set(version.manifest.chunks.map(\.hash.string)))
            let folder = directory.appendingPathComponent("chunks")
            #expect(!FileManager.default.fileExists(atPath: folder.path))

            // Another account has none of them.
            let grace = try await Device.signIn(client, account: "grace", device: "phone")
            let answer = try await grace.send(.get, grace.path("chunks/\(version.manifest.chunks[0].hash)"))
            #expect(answer.error?.code == .chunkNotFound)
            for key in keys { try await bucket.delete(key) }
        }
    }
}
