import Foundation
import SyncEngine
import Synchronization
import Testing
import UbiquityProtocol
import UbiquityTestSupport

@testable import UbiquityKit

@Suite("MetadataQuery updates", .timeLimit(.minutes(5)))
struct MetadataQueryUpdateTests {
    /// Writes `names` into the laptop's Documents/ and waits until the desktop has them.
    static func land(_ names: [String], on laptop: TestDevice, seenBy desktop: TestDevice) async throws {
        for name in names { try Data(name.utf8).write(to: laptop.documents.appendingPathComponent(name)) }
        for name in names {
            let there = desktop.documents.appendingPathComponent(name)
            #expect(await eventually { (try? there.ubiquitousResourceValues())?.downloadingStatus == .current })
        }
    }

    @Test(
        "Disabled updates hold changes — results stay put — and enabling delivers them in one did-update",
        arguments: EngineMode.allCases)
    func holding(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            try await Self.land(["Kept.txt", "Gone.txt"], on: laptop, seenBy: desktop)
            let query = MetadataQuery(ubiquity: desktop.ubiquity)
            // Notifications are posted on a queue the test can wait on: whatever enableUpdates() releases is
            // delivered there, so once it is idle, what was not told was held.
            let deliveries = OperationQueue()
            deliveries.maxConcurrentOperationCount = 1
            query.operationQueue = deliveries
            let recorder = QueryRecorder(query)
            query.start()
            #expect(await eventually { recorder.told("finish") })
            #expect(query.resultCount == 2)

            query.disableUpdates()
            query.disableUpdates()
            try await Self.land(["One.txt", "Two.txt"], on: laptop, seenBy: desktop)
            // Removed after the new files are written, so that neither reuses its inode (which the engine would take
            // for a rename).
            try FileManager.default.removeItem(at: laptop.documents.appendingPathComponent("Gone.txt"))
            // Gone from the desktop's view of the engine, and the query heard all three changes: it holds them.
            let gone = desktop.documents.appendingPathComponent("Gone.txt")
            #expect(await eventually { (try? gone.ubiquitousResourceValues()) == nil })
            #expect(await eventually { query.untoldChangeCount == 3 }, "One.txt, Two.txt added; Gone.txt removed")
            #expect(recorder.updates.isEmpty)
            #expect(query.results.map(\.fileName) == ["Gone.txt", "Kept.txt"])
            query.enableUpdates()
            // The queue is serial: an operation added now runs after anything enableUpdates() put there.
            await withCheckedContinuation { done in deliveries.addOperation { done.resume() } }
            #expect(recorder.updates.isEmpty, "one disableUpdates() is still unmatched: the changes stay held")
            query.enableUpdates()
            #expect(await eventually { query.results.map(\.fileName) == ["Kept.txt", "One.txt", "Two.txt"] })
            #expect(await eventually { recorder.updates.count == 1 }, "\(recorder.updates)")
            let update = try #require(recorder.updates.first)
            #expect(update.added == ["One.txt", "Two.txt"] && update.removed == ["Gone.txt"], "\(update)")
            #expect(recorder.disagreements.withLock { $0 }.isEmpty)
            query.stop()
        }
    }

    @Test(
        "A batching interval groups changes that come close together into one did-update",
        arguments: EngineMode.allCases)
    func batching(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let query = MetadataQuery(ubiquity: desktop.ubiquity)
            let clock = ManualClock()
            query.clock = clock
            query.notificationBatchingInterval = 5
            #expect(query.notificationBatchingInterval == 5)
            let recorder = QueryRecorder(query)
            query.start()
            #expect(await eventually { recorder.told("finish") })
            let names = ["Apples.txt", "Bananas.txt", "Cherries.txt"]
            for name in names { try Data(name.utf8).write(to: laptop.documents.appendingPathComponent(name)) }
            // All three heard, one after the other: the first started the interval's timer, on the query's clock.
            #expect(await eventually(.seconds(40)) { query.untoldChangeCount == names.count })
            #expect(recorder.updates.isEmpty, "the interval has not passed")
            // The timer's task may not have begun its sleep yet when the changes come close together: the clock is
            // moved once it has, or the move would pass before the sleep was asked for.
            #expect(await clock.waitForSleepers(1), "the interval's timer sleeps on the query's clock")
            clock.advance(by: .seconds(5))
            #expect(await eventually { !recorder.updates.isEmpty })
            #expect(recorder.updates.count == 1 && Set(recorder.updates[0].added) == Set(names), "\(recorder.updates)")
            query.stop()
        }
    }

    @Test(
        "stop() ends notifications and the AsyncSequence; the results stay",
        arguments: EngineMode.allCases)
    func stopping(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            try await Self.land(["Before.txt"], on: laptop, seenBy: desktop)
            let query = MetadataQuery(ubiquity: desktop.ubiquity)
            let watcher = MetadataQuery(ubiquity: desktop.ubiquity)
            let recorder = QueryRecorder(query)
            let updates = query.updates()
            let ended = Mutex(false)
            let consumer = Task {
                for await _ in updates {}
                ended.withLock { $0 = true }
            }
            query.start()
            watcher.start()
            #expect(await eventually { recorder.told("finish") })
            query.stop()
            #expect(query.isStopped && !query.isStarted && !query.start())
            #expect(await eventually { ended.withLock { $0 } })
            await finished(consumer)
            let told = recorder.notified.withLock { $0.count }

            try await Self.land(["After.txt"], on: laptop, seenBy: desktop)
            #expect(await eventually { watcher.results.contains { $0.fileName == "After.txt" } })
            #expect(recorder.notified.withLock { $0.count } == told)
            #expect(query.results.map(\.fileName) == ["Before.txt"])
            watcher.stop()
        }
    }

    @Test(
        "Notifications go to the operation queue, in order, results agreeing; the AsyncSequence delivers the same events",
        arguments: EngineMode.allCases)
    func queueAndSequence(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            let queue = OperationQueue()
            queue.name = "query observers"
            let query = MetadataQuery(ubiquity: desktop.ubiquity)
            query.operationQueue = queue
            query.predicate = #Predicate<MetadataItem> { $0.fileName.starts(with: "Item_") }
            let recorder = QueryRecorder(query)
            query.start()
            #expect(await eventually { recorder.told("finish") })
            for index in 0..<6 {
                try Data("\(index)".utf8).write(to: laptop.documents.appendingPathComponent("Item_\(index).txt"))
            }
            try Data("x".utf8).write(to: laptop.documents.appendingPathComponent("Other.txt"))
            #expect(await eventually { query.resultCount == 6 })
            try FileManager.default.removeItem(at: laptop.documents.appendingPathComponent("Item_0.txt"))
            #expect(await eventually { query.resultCount == 5 })

            #expect(await eventually { recorder.streamed.withLock { $0 } == recorder.notified.withLock { $0 } })
            let kinds = recorder.notified.withLock { $0.map(\.kind) }
            #expect(kinds.first == "start")
            #expect(kinds.firstIndex(of: "finish")! < kinds.firstIndex(of: "update")!)
            #expect(!recorder.updates.contains { $0.added.contains("Other.txt") })
            #expect(recorder.queues.withLock { $0 }.allSatisfy { $0 == ObjectIdentifier(queue) })
            #expect(recorder.disagreements.withLock { $0 }.isEmpty)
            query.stop()
        }
    }

    @Test(
        "Signing out removes the results; signing in again brings them back, without restarting the query",
        arguments: EngineMode.allCases)
    func accountChanges(mode: EngineMode) async throws {
        try await withTwoDevices(mode) { laptop, desktop, _ in
            try await Self.land(["Item_1.txt", "Item_2.txt"], on: laptop, seenBy: desktop)
            let query = MetadataQuery(ubiquity: desktop.ubiquity)
            let recorder = QueryRecorder(query)
            query.start()
            #expect(await eventually { query.resultCount == 2 })

            await desktop.ubiquity.signOut()
            #expect(await eventually { query.resultCount == 0 })
            // The update is told on the query's queue after the results change: waited for, not read at once.
            #expect(await eventually { recorder.updated("-", "Item_1.txt") && recorder.updated("-", "Item_2.txt") })
            await desktop.ubiquity.signIn(desktop.profile)
            #expect(await eventually(.seconds(40)) { query.resultCount == 2 })
            #expect(query.isStarted)

            try await Self.land(["Item_3.txt"], on: laptop, seenBy: desktop)
            #expect(await eventually { query.resultCount == 3 })
            query.stop()
        }
    }
}
