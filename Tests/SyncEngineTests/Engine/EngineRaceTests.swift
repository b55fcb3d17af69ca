import DocumentKit
import Foundation
import SyncEngine
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityTestSupport

/// Races between the engine and the user (a save landing while another device's deletion is carried out) and
/// between two requests of the user (two downloads of one item at once), each forced through a file presenter's
/// hook: no sleeps, the same interleaving every run.
@Suite("Engine races: a remote deletion against a save, concurrent downloads of one item", .serialized)
struct EngineRaceTests {
    static let path = try! ItemPath("Documents/List.txt")

    /// Holds the first coordinated write of its file until `expected` callers said they asked for it, so the
    /// content cannot land before every request is under way.
    final class GatePresenter: FilePresenter, Sendable {
        let presentedItemURL: URL?
        let presentedItemOperationQueue = OperationQueue()
        let writes = Mutex(0)
        private let asks = DispatchSemaphore(value: 0)
        private let expected: Int

        init(_ url: URL, holdingUntil expected: Int) {
            presentedItemURL = url
            self.expected = expected
        }

        /// Says one more request was made.
        func asked() { asks.signal() }

        func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
            let first = writes.withLock {
                $0 += 1
                return $0 == 1
            }
            // A bound against hanging only: every request signals before it is made.
            if first { for _ in 0..<expected { _ = asks.wait(timeout: .now() + 20) } }
            writer(nil)
        }
    }

    /// Holds every coordinated write of its file until ``letGo()`` (20 s at most: a bound against hanging only), and
    /// tells ``began`` when the first one asked.
    final class HoldingPresenter: FilePresenter, Sendable {
        let presentedItemURL: URL?
        let presentedItemOperationQueue = OperationQueue()
        /// Whether a write is held now.
        let holding = Mutex(false)
        /// An element when a write asked to go ahead.
        let began: AsyncStream<Void>
        private let beginning: AsyncStream<Void>.Continuation
        private let released = Mutex(false)
        private let release = DispatchSemaphore(value: 0)

        init(_ url: URL) {
            presentedItemURL = url
            let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
            began = stream
            beginning = continuation
        }

        /// Lets the held write, and every later one, go ahead.
        func letGo() {
            released.withLock { $0 = true }
            release.signal()
        }

        func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
            holding.withLock { $0 = true }
            beginning.yield()
            if !released.withLock({ $0 }) { _ = release.wait(timeout: .now() + 20) }
            holding.withLock { $0 = false }
            writer(nil)
        }
    }

    @Test("A deletion from another device removes the unchanged local copy, and it does not come back")
    func remoteDeletionRemovesUnchangedCopy() async throws {
        try await DevicePair.run { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            try devices.write(Data("milk".utf8), to: Self.path, on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(devices.read(Self.path, on: desktop) == Data("milk".utf8))

            try FileManager.default.removeItem(at: desktop.layout.url(of: Self.path))
            try await desktop.syncOnce()
            try await laptop.syncOnce()
            #expect(devices.read(Self.path, on: laptop) == nil, "the deleted item's file is still on the laptop")
            #expect(try await laptop.item(at: Self.path) == nil)

            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(devices.read(Self.path, on: laptop) == nil)
            #expect(devices.read(Self.path, on: desktop) == nil, "the deleted item came back")
            #expect(try await desktop.items().filter { $0.kind != .directory }.isEmpty)
        }
    }

    @Test(
        "A save landing while another device's deletion is carried out is kept: it goes up as an item of its own and reaches the other device"
    )
    func saveDuringRemoteDeletionIsKept() async throws {
        try await DevicePair.run { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            try devices.write(Data("milk".utf8), to: Self.path, on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(devices.read(Self.path, on: desktop) == Data("milk".utf8))
            try FileManager.default.removeItem(at: desktop.layout.url(of: Self.path))
            try await desktop.syncOnce()

            // Asked to make way for the engine's delete, an editor saves first: after the engine decided the copy
            // was the synced one, before it is removed.
            let saved = Data("milk, bread (saved on the laptop while the deletion came in)".utf8)
            let presenter = SaveDuringDownloadTests.SavingPresenter(laptop.layout.url(of: Self.path), saving: saved)
            FileCoordinator.addFilePresenter(presenter)
            defer { FileCoordinator.removeFilePresenter(presenter) }
            try await laptop.syncOnce()
            #expect(presenter.saves.withLock { $0 } >= 1, "the engine removed the file without a coordinated delete")
            #expect(devices.read(Self.path, on: laptop) == saved, "the save made during the deletion was deleted")

            try await laptop.syncOnce()
            let hash = try contentHash(saved)
            let item = try #require(try await laptop.item(at: Self.path), "the saved file is not an item on the laptop")
            #expect(item.contentHash == hash)
            let (current, versions) = try await laptop.versions(of: Self.path)
            #expect(
                versions.first { $0.id == current }?.contentHash == hash, "the save is not the item's current version")
            try await desktop.syncOnce()
            #expect(devices.read(Self.path, on: desktop) == saved, "the save did not reach the other device")
        }
    }

    @Test(
        "Two downloads of one placeholder asked at once both succeed; right after, the item is current and .ubiquity/tmp is empty"
    )
    func concurrentDownloadsOfOnePlaceholder() async throws {
        try await DevicePair.run(configuration: .init(eagerDownloadLimit: 0)) { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            var random = SeededRandom(seed: 0x5EED)
            let contents = random.bytes(300_000)  // several chunks: assembling it takes a while
            try devices.write(contents, to: Self.path, on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(try await desktop.item(at: Self.path)?.isPlaceholder == true)

            let gate = GatePresenter(desktop.layout.url(of: Self.path), holdingUntil: 2)
            FileCoordinator.addFilePresenter(gate)
            defer { FileCoordinator.removeFilePresenter(gate) }
            let failures = await withTaskGroup(of: String?.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        gate.asked()
                        do {
                            try await desktop.download(Self.path)
                            return nil
                        } catch {
                            return "\(error)"
                        }
                    }
                }
                var failures: [String] = []
                for await case let failure? in group { failures.append(failure) }
                return failures
            }
            #expect(failures.isEmpty, "a download failed: \(failures)")
            #expect(gate.writes.withLock { $0 } >= 1, "the content was not put in place with a coordinated write")
            #expect(devices.read(Self.path, on: desktop) == contents)

            let item = try #require(try await desktop.item(at: Self.path))
            #expect(!item.isPlaceholder)
            #expect(item.baseVersion != nil)
            #expect(item.baseVersion == item.serverVersion, "the downloaded item does not read current")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: desktop.layout.temporary.path)
            #expect(leftovers.isEmpty, "the desktop's .ubiquity/tmp holds \(leftovers), which nothing will use")
        }
    }

    @Test(
        "An item downloaded on demand after it changed on the service has the newest content and reads current at once")
    func downloadOnDemandReadsCurrent() async throws {
        try await DevicePair.run(configuration: .init(eagerDownloadLimit: 0)) { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            try devices.write(Data("milk".utf8), to: Self.path, on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            let heard = try #require(try await desktop.item(at: Self.path))
            #expect(heard.isPlaceholder)

            // A newer version the desktop has not heard of: no round runs before the download.
            let newest = Data("milk, eggs".utf8)
            try devices.write(newest, to: Self.path, on: laptop)
            try await laptop.syncOnce()
            try await desktop.download(Self.path)

            #expect(devices.read(Self.path, on: desktop) == newest)
            let item = try #require(try await desktop.item(at: Self.path))
            let current = try await desktop.versions(of: Self.path).current
            #expect(current != heard.serverVersion, "the item did not change on the service")
            #expect(!item.isPlaceholder)
            #expect(item.baseVersion == current)
            #expect(item.serverVersion == current, "the downloaded item does not read current until a later round")
        }
    }

    @Test("A download waiting for its item's lane ends at once when cancelled, while the download ahead of it is held")
    func cancelledDownloadLeavesTheLane() async throws {
        try await DevicePair.run(configuration: .init(eagerDownloadLimit: 0)) { devices in
            let (laptop, desktop) = (devices.laptop, devices.desktop)
            try devices.write(Data("bread".utf8), to: Self.path, on: laptop)
            try await laptop.syncOnce()
            try await desktop.syncOnce()
            #expect(try await desktop.item(at: Self.path)?.isPlaceholder == true)

            let gate = HoldingPresenter(desktop.layout.url(of: Self.path))
            FileCoordinator.addFilePresenter(gate)
            defer { FileCoordinator.removeFilePresenter(gate) }
            // The first download takes the item's lane and stops in the coordinated write that puts the content in
            // place: the gate holds it, as an unreachable service holds a request.
            let first = Task { try await desktop.download(Self.path) }
            for await _ in gate.began { break }
            // The second waits for the lane; cancelled (a test over its time limit, an engine shutting down), it
            // must end now, not when the first lets go.
            let second = Task { try await desktop.download(Self.path) }
            second.cancel()
            let outcome = await second.result
            #expect(gate.holding.withLock { $0 }, "the cancelled download waited for the download holding the lane")
            #expect(throws: CancellationError.self) { try outcome.get() }

            gate.letGo()
            try await first.value
            #expect(devices.read(Self.path, on: desktop) == Data("bread".utf8))
        }
    }
}
