import DocumentKit
import Foundation
import Testing
import UbiquityProtocol

@testable import SyncEngine

/// What an earlier engine left in `.ubiquity/tmp/` goes, even when the folder cannot be listed as the engine starts.
@Suite("An earlier engine's leftovers in .ubiquity/tmp")
struct TemporaryLeftoversTests {
    @Test("Cleared once the folder can be listed, taking only what an earlier engine left; partial downloads stay")
    func clearedWhenListable() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-leftovers-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let disk = CountingDisk()
        let layout = ContainerLayout(root: root, container: try ContainerID("TEAM.com.example.leftovers"))
        let sync = try ContainerSync(
            layout: layout, client: ServiceClient(baseURL: "http://127.0.0.1:9", token: "unused"),
            device: SavingDevice(id: DeviceID(), name: "desk"), configuration: .init(disk: disk))
        let temporary = layout.temporary
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
        let leftover = temporary.appendingPathComponent("handed-over-before-a-kill")
        let partial = temporary.appendingPathComponent("item.version.download" + ContainerSync.partialSuffix)
        for url in [leftover, partial] { try Data("bytes".utf8).write(to: url) }

        // The listing fails as the engine starts: nothing can be cleared yet.
        disk.beforeListing.withLock { $0 = { _ in throw POSIXError(.EIO) } }
        await sync.clearTemporaryFiles()
        #expect(FileManager.default.fileExists(atPath: leftover.path))

        // A download of this engine's, handed over since (after a tick of the coarse clock file times come from).
        let started = try #require(disk.identity(at: temporary)).capturedAt
        func coarseNow() -> Int64 {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME_COARSE, &now)
            return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
        }
        while coarseNow() <= started {}
        let own = temporary.appendingPathComponent("handed-over-now")
        try Data("bytes".utf8).write(to: own)

        disk.beforeListing.withLock { $0 = nil }
        await sync.clearTemporaryFiles()
        #expect(!FileManager.default.fileExists(atPath: leftover.path), "the earlier engine's copy stays")
        #expect(FileManager.default.fileExists(atPath: own.path), "a download under way was taken")
        #expect(FileManager.default.fileExists(atPath: partial.path), "a partial download is resumed, not cleared")
    }
}
