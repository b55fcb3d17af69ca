import DocumentKit
import Foundation
import SyncEngine
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityTestSupport

/// A presenter of one document that records the version messages it gets.
final class VersionPresenter: FilePresenter {
    let presentedItemURL: URL?
    let presentedItemOperationQueue = OperationQueue()
    private let messages = Mutex<[String]>([])

    init(_ url: URL) {
        presentedItemURL = url
        presentedItemOperationQueue.maxConcurrentOperationCount = 1
    }

    var log: [String] { messages.withLock { $0 } }
    func presentedItemDidGain(_ version: PresentedItemVersion) {
        messages.withLock { $0.append("gained \(version.persistentIdentifier) conflict=\(version.isConflict)") }
    }
    func presentedItemDidLose(_ version: PresentedItemVersion) {
        messages.withLock { $0.append("lost \(version.persistentIdentifier)") }
    }
    func presentedItemDidResolveConflict(_ version: PresentedItemVersion) {
        messages.withLock { $0.append("resolved \(version.persistentIdentifier)") }
    }
}

extension TwoDeviceSyncTests {
    @Test(
        "A conflict version is recorded on both devices, told to presenters, readable from .ubiquity/versions on demand; resolving tells them it is gone"
    )
    func conflictVersionsReachPresenters() async throws {
        try await withDevices { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            try devices.write("milk", to: "Documents/List.txt", on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            let presenter = VersionPresenter(devices.file("Documents/List.txt", on: desktop))
            FileCoordinator.addFilePresenter(presenter)
            defer { FileCoordinator.removeFilePresenter(presenter) }

            try devices.write("milk, eggs", to: "Documents/List.txt", on: laptop)
            try devices.write("milk, bread and butter", to: "Documents/List.txt", on: desktop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            try await laptop.syncOnce()

            let path = try ItemPath("Documents/List.txt")
            let item = try #require(try await desktop.item(at: path))
            let conflict = try #require(try await desktop.versions(of: path).versions.first { $0.isConflict })
            #expect(await eventually { presenter.log.contains("gained \(conflict.id.string) conflict=true") })
            let current = try #require(devices.read("Documents/List.txt", on: desktop))
            let other = current == "milk, eggs" ? "milk, bread and butter" : "milk, eggs"

            // Downloaded when asked for, into the private folder, never into Documents/.
            let copy = try await desktop.contents(of: conflict.id, at: path)
            #expect(copy.path.hasPrefix(desktop.layout.versions.path))
            #expect(String(decoding: try Data(contentsOf: copy), as: UTF8.self) == other)
            #expect(try devices.documents(on: desktop) == ["List.txt"])
            #expect(try await desktop.contents(of: item.baseVersion!, at: path) == desktop.layout.url(of: path))

            try await laptop.resolve(path)  // the current version wins
            try await desktop.syncOnce()
            #expect(await eventually { presenter.log.contains("resolved \(conflict.id.string)") })
            #expect(await eventually { presenter.log.contains("lost \(conflict.id.string)") })
            #expect(!FileManager.default.fileExists(atPath: copy.path), "the downloaded copy went with its version")
            #expect(try await desktop.item(at: path)?.hasUnresolvedConflicts == false)
            #expect(devices.read("Documents/List.txt", on: desktop) == current)
        }
    }

    @Test("Resolving with the service down is queued and sent when it is back; the other device sees it")
    func resolutionQueuedOffline() async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-outbox-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        func device(_ name: String) async throws -> ContainerSync {
            let client = try await service.signIn(account: "ada", device: name)
            return try ContainerSync(
                layout: ContainerLayout(root: root.appendingPathComponent(name), container: Self.container),
                client: client, device: SavingDevice(id: DeviceID(), name: name))
        }
        let laptop = try await device("laptop")
        let desktop = try await device("desktop")
        let path = try ItemPath("Documents/List.txt")
        try Data("milk".utf8).write(to: laptop.layout.url(of: path))
        try await laptop.syncOnce()
        try await desktop.syncOnce()
        try Data("milk, eggs".utf8).write(to: laptop.layout.url(of: path))
        try Data("milk, bread".utf8).write(to: desktop.layout.url(of: path))
        try await laptop.syncOnce()
        try await desktop.syncOnce()
        let conflict = try #require(try await desktop.versions(of: path).versions.first { $0.isConflict })

        await service.stop()
        try await desktop.resolve(path, keeping: conflict.id)
        let state = try LocalStateStore(url: desktop.layout.stateDatabase)
        #expect(try state.queuedOperationCount() > 0, "the resolution waits in the state database")

        let back = try await LocalService.start(in: service.directory, port: service.port)
        try await desktop.syncOnceAfterRestart()
        #expect(try state.queuedOperationCount() == 0)
        try await laptop.syncOnceAfterRestart()
        let kept = try await laptop.versions(of: path)
        #expect(kept.current == conflict.id)
        #expect(kept.versions.map(\.id) == [conflict.id], "the other versions were removed")
        let winner = String(decoding: try Data(contentsOf: laptop.layout.url(of: path)), as: UTF8.self)
        #expect(winner == String(decoding: try Data(contentsOf: desktop.layout.url(of: path)), as: UTF8.self))
        await back.remove()
    }
}

@Suite("Transfers: progress, errors, chunks already here, resumed downloads")
struct TransferTests {
    static let container = try! ContainerID("TEAM.com.example.grocery")

    private func devices(
        _ service: LocalService, root: URL, eagerLimit: Int64 = 1 << 30
    ) async throws -> (ContainerSync, ContainerSync) {
        func device(_ name: String) async throws -> ContainerSync {
            let client = try await service.signIn(account: "ada", device: name)
            return try ContainerSync(
                layout: ContainerLayout(root: root.appendingPathComponent(name), container: Self.container),
                client: client, device: SavingDevice(id: DeviceID(), name: name),
                configuration: .init(eagerDownloadLimit: eagerLimit))
        }
        return (try await device("laptop"), try await device("desktop"))
    }

    private static func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix(seed: seed)
        return (0..<(count / 8)).map { _ in generator.next() }.withUnsafeBytes { Array($0) }
    }

    @Test(
        "A download reports its progress to the end, and fetches only the chunks not already in the previous local version"
    )
    func downloadsReuseLocalChunksAndReportProgress() async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-transfer-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let (laptop, desktop) = try await devices(service, root: root, eagerLimit: 0)
        let path = try ItemPath("Documents/Photo.bin")
        var bytes = Self.randomBytes(4 << 20, seed: 7)
        try Data(bytes).write(to: laptop.layout.url(of: path))
        try await laptop.syncOnce()
        try await desktop.syncOnce()
        #expect(try await desktop.item(at: path)?.isPlaceholder == true)

        let events = desktop.events()
        let collected = Task {
            var progress: [ItemTransfer?] = []
            for await event in events {
                if case .progress(_, _, let transfer) = event {
                    progress.append(transfer)
                    if transfer == nil { break }
                }
            }
            return progress
        }
        try await desktop.download(path)
        let progress = await finished(collected)
        #expect(progress.first??.completed == 0)
        #expect(progress.dropLast().last??.percentDone == 100)
        #expect(progress.count > 3, "progress is told chunk by chunk")
        #expect(try Data(contentsOf: desktop.layout.url(of: path)) == Data(bytes))

        bytes.insert(0x2A, at: bytes.count / 2)
        try Data(bytes).write(to: laptop.layout.url(of: path))
        try await laptop.syncOnce()
        let before = service.figure("ubiquity_chunk_bytes_out_total")
        try await desktop.syncOnce()
        try await desktop.download(path)
        let downloaded = service.figure("ubiquity_chunk_bytes_out_total") - before
        #expect(try Data(contentsOf: desktop.layout.url(of: path)) == Data(bytes))
        #expect(downloaded > 0 && downloaded <= 3 * (256 << 10), "\(downloaded) bytes downloaded for a 1-byte insert")
        await service.remove()
    }

    @Test("A download a killed engine left half done resumes from the chunks already written")
    func interruptedDownloadResumes() async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-resume-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let (laptop, desktop) = try await devices(service, root: root, eagerLimit: 0)
        let path = try ItemPath("Documents/Movie.bin")
        let bytes = Self.randomBytes(4 << 20, seed: 9)
        try Data(bytes).write(to: laptop.layout.url(of: path))
        try await laptop.syncOnce()
        try await desktop.syncOnce()
        let item = try #require(try await desktop.item(at: path))
        let version = try #require(try await desktop.versions(of: path).versions.first)
        guard case .file(let chunks) = version.manifest else { Issue.record("not a file"); return }
        #expect(chunks.count > 8)

        // What an engine killed mid-download leaves: the first half of the chunks written, then a torn chunk.
        let half = chunks.prefix(chunks.count / 2).reduce(Int64(0)) { $0 + $1.size }
        let partial = desktop.layout.temporary.appendingPathComponent(
            "\(item.id.string).\(version.id.string).download.partial")
        try Data(bytes[0..<Int(half) + 1000]).write(to: partial)
        // A restarted engine keeps it.
        desktop.releaseLock()
        let restarted = try ContainerSync(
            layout: desktop.layout, client: desktop.client, device: desktop.device,
            configuration: desktop.configuration)
        #expect(FileManager.default.fileExists(atPath: partial.path))
        let before = service.figure("ubiquity_chunk_bytes_out_total")
        try await restarted.download(path)
        let downloaded = Int64(service.figure("ubiquity_chunk_bytes_out_total") - before)
        #expect(try Data(contentsOf: desktop.layout.url(of: path)) == Data(bytes))
        #expect(downloaded == Int64(bytes.count) - half, "only the chunks not yet written were fetched")
        #expect(!FileManager.default.fileExists(atPath: partial.path))
        await service.remove()
    }

    @Test(
        "After a restart, a new version's download removes the partial file an older one left, and downloads list the temporary folder once"
    )
    func olderPartialDownloadRemoved() async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-old-partial-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let (laptop, desktop) = try await devices(service, root: root, eagerLimit: 0)
        let path = try ItemPath("Documents/Movie.bin")
        let bytes = Self.randomBytes(1 << 20, seed: 12)
        try Data(bytes).write(to: laptop.layout.url(of: path))
        try await laptop.syncOnce()
        try await desktop.syncOnce()
        let item = try #require(try await desktop.item(at: path))
        let first = try #require(try await desktop.versions(of: path).versions.first)

        var edited = bytes
        edited[500_000] &+= 1
        try Data(edited).write(to: laptop.layout.url(of: path))
        let others = try (1...5).map { try ItemPath("Documents/Note \($0).txt") }
        for (number, other) in others.enumerated() {
            try Data("note \(number)".utf8).write(to: laptop.layout.url(of: other))
        }
        try await laptop.syncOnce()
        try await desktop.syncOnce()
        // What an engine stopped in the first version's download left.
        let stale = desktop.layout.temporary.appendingPathComponent(
            "\(item.id.string).\(first.id.string).download.partial")
        try Data(bytes[0..<1000]).write(to: stale)
        desktop.releaseLock()
        let disk = CountingDisk()
        var configuration = desktop.configuration
        configuration.disk = disk
        let restarted = try ContainerSync(
            layout: desktop.layout, client: desktop.client, device: desktop.device, configuration: configuration)

        try await restarted.download(path)
        for other in others { try await restarted.download(other) }
        #expect(try Data(contentsOf: desktop.layout.url(of: path)) == Data(edited))
        for (number, other) in others.enumerated() {
            #expect(try Data(contentsOf: desktop.layout.url(of: other)) == Data("note \(number)".utf8))
        }
        #expect(!FileManager.default.fileExists(atPath: stale.path), "the older version's partial file is gone")
        let left = try FileManager.default.contentsOfDirectory(atPath: desktop.layout.temporary.path)
        #expect(left.isEmpty, "nothing else is left behind: \(left)")
        #expect(disk.listings(of: desktop.layout.temporary) == 1, "six downloads, the folder listed once")
        await service.remove()
    }

    @Test("A download the service cannot serve is recorded on the item, the round goes on, and it is tried again")
    func failedDownloadIsRecordedAndRetried() async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-download-error-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let (laptop, desktop) = try await devices(service, root: root)
        let path = try ItemPath("Documents/List.txt")
        try Data("milk".utf8).write(to: laptop.layout.url(of: path))
        try Data("bread".utf8).write(to: laptop.layout.url(of: try ItemPath("Documents/Other.txt")))
        try await laptop.syncOnce()
        // The service's copy of the chunk is damaged (a failing disk, say).
        let version = try #require(try await laptop.versions(of: path).versions.first)
        let hash = try #require(version.manifest.chunks.first?.hash)
        let restore = try await service.spoilChunk(hash, ofAccount: "ada")

        try await desktop.syncOnce()
        let failed = try #require(try await desktop.item(at: path))
        #expect(failed.downloadError != nil)
        #expect(failed.isPlaceholder)
        #expect(
            try Data(contentsOf: desktop.layout.documents.appendingPathComponent("Other.txt")) == Data("bread".utf8),
            "the rest of the round went on")

        try restore()
        try await desktop.syncOnce()
        #expect(try await desktop.item(at: path)?.downloadError == nil)
        #expect(try Data(contentsOf: desktop.layout.url(of: path)) == Data("milk".utf8))
        await service.remove()
    }

    @Test(
        "A chunk served with other bytes is caught by the whole content's hash; the partial download is kept up to it and resumed from there"
    )
    func wrongChunkCutsThePartialDownload() async throws {
        let service = try await LocalService.start()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-wrong-chunk-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let (laptop, desktop) = try await devices(service, root: root)
        let path = try ItemPath("Documents/Big.bin")
        let bytes = Self.randomBytes(3 << 20, seed: 11)
        try Data(bytes).write(to: laptop.layout.url(of: path))
        try await laptop.syncOnce()
        let chunks = try #require(try await laptop.versions(of: path).versions.first).manifest.chunks
        #expect(chunks.count > 10)
        let spoiled = chunks.count / 2
        let restore = try await service.spoilChunk(chunks[spoiled].hash, ofAccount: "ada")

        try await desktop.syncOnce()
        #expect(try await desktop.item(at: path)?.downloadError?.code == .chunkHashMismatch)
        #expect(try await desktop.item(at: path)?.isPlaceholder == true)
        let partials = try FileManager.default.contentsOfDirectory(
            at: desktop.layout.temporary, includingPropertiesForKeys: nil
        )
        .filter { $0.lastPathComponent.hasSuffix(".partial") }
        let kept = chunks[..<spoiled].reduce(Int64(0)) { $0 + $1.size }
        #expect(partials.count == 1)
        #expect(
            try partials.map { try Data(contentsOf: $0) } == [Data(bytes[..<Int(kept)])], "cut before the wrong chunk")

        try restore()
        let sentBefore = service.figure("ubiquity_chunk_bytes_out_total")
        try await desktop.syncOnce()
        #expect(try Data(contentsOf: desktop.layout.url(of: path)) == Data(bytes))
        #expect(try await desktop.item(at: path)?.downloadError == nil)
        #expect(
            service.figure("ubiquity_chunk_bytes_out_total") - sentBefore == bytes.count - Int(kept),
            "only what the partial download lacked was sent again")
        await service.remove()
    }

    @Test(
        "An item the service refuses (over quota) is on the other device as a placeholder at once, and its upload error is recorded until it fits"
    )
    func refusedUploadIsRecordedOnTheItem() async throws {
        let service = try await LocalService.start(quota: 1 << 20)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-quota-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let (laptop, desktop) = try await devices(service, root: root)
        let big = try ItemPath("Documents/Big.bin")
        let small = try ItemPath("Documents/Small.txt")
        try Data(Self.randomBytes(2 << 20, seed: 3)).write(to: laptop.layout.url(of: big))
        try Data("fits".utf8).write(to: laptop.layout.url(of: small))
        try await laptop.syncOnce()

        let refused = try #require(try await laptop.item(at: big))
        #expect(refused.uploadError?.code == .quotaExceeded)
        #expect(refused.baseVersion == nil)
        #expect(try await laptop.item(at: small)?.uploadError == nil, "the other change went on")

        try await desktop.syncOnce()
        #expect(try await desktop.item(at: big)?.isPlaceholder == true, "its record went first")
        #expect(try Data(contentsOf: desktop.layout.url(of: small)) == Data("fits".utf8))

        try Data("now small".utf8).write(to: laptop.layout.url(of: big))
        try await laptop.syncOnce()
        let fitted = try #require(try await laptop.item(at: big))
        #expect(fitted.uploadError == nil)
        #expect(fitted.baseVersion != nil)
        try await desktop.syncOnce()
        #expect(try Data(contentsOf: desktop.layout.url(of: big)) == Data("now small".utf8))
        await service.remove()
    }
}

extension TwoDeviceSyncTests {
    @Test(
        "A file written where only a placeholder was is uploaded over it: both contents kept (one current, one a conflict version), no conflicted copy"
    )
    func fileWrittenOverAPlaceholderIsKept() async throws {
        try await withDevices(eagerLimit: 16) { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            let text = String(repeating: "laptop's list; ", count: 10)
            try devices.write(text, to: "Documents/List.txt", on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            let path = try ItemPath("Documents/List.txt")
            #expect(try await desktop.item(at: path)?.isPlaceholder == true)

            try devices.write("desktop's own list", to: "Documents/List.txt", on: desktop)
            try await desktop.syncOnce()
            try await laptop.syncOnce()
            #expect(try devices.documents(on: desktop) == ["List.txt"], "no conflicted copy")
            let (current, versions) = try await desktop.versions(of: path)
            let conflict = try #require(versions.first { $0.isConflict })
            let copy = try await desktop.contents(of: conflict.id, at: path)
            let kept = [
                devices.read("Documents/List.txt", on: desktop),
                String(decoding: try Data(contentsOf: copy), as: UTF8.self),
            ]
            #expect(Set(kept) == [text, "desktop's own list"], "both contents are kept")
            #expect(try await desktop.item(at: path)?.baseVersion == current)
            #expect(devices.read("Documents/List.txt", on: laptop) == devices.read("Documents/List.txt", on: desktop))
            #expect(try await laptop.item(at: path)?.hasUnresolvedConflicts == true)
        }
    }
}

extension TwoDeviceSyncTests {
    @Test("A record sent just before the engine was killed (its content never followed) is adopted on restart")
    func recordWithoutContentIsAdopted() async throws {
        try await withDevices { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            let path = try ItemPath("Documents/List.txt")
            try devices.write("milk", to: path.string, on: laptop)
            // What a killed engine leaves on the service: the record, sent first, and nothing else.
            let orphan = ItemID()
            _ = try await laptop.client.createItem(
                CreateItemRequest(id: orphan, path: path, kind: .file), in: Self.container)

            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(try devices.documents(on: laptop) == ["List.txt"], "no conflicted copy")
            #expect(try await laptop.item(at: path)?.id == orphan)
            #expect(try await laptop.item(at: path)?.baseVersion != nil)
            #expect(devices.read(path.string, on: desktop) == "milk")
        }
    }
}
