import Foundation
import RecordStore

/// The other devices' tag changes as they arrive: the tag store imports each log another device's engine brings
/// as it appears in the container, and says so.
extension GroceryApp {
    /// The tags now, then again after every import of other devices' tag changes — until the task that iterates
    /// it is cancelled. Opens the tag store if it is not open.
    ///
    /// ```swift
    /// for try await tags in try await app.watchTags() {
    ///     print(tags.map(\.name))
    /// }
    /// ```
    /// - Throws: What ``tags()`` throws, when the store cannot be opened; the stream ends with what a later read
    ///   throws.
    public func watchTags() async throws -> AsyncThrowingStream<[TagSummary], any Error> {
        let imports = try await tagStore().coordinator.importedChanges()
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [TagSummary].self)
        // The stream's reader: it reads the tags once, then once after each import, for as long as it is iterated.
        let task = Task { @MainActor [weak self] in
            do {
                guard let first = try await self?.tags() else { return continuation.finish() }
                continuation.yield(first)
                for await _ in imports {
                    guard let self else { break }
                    continuation.yield(try await self.tags())
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Runs `body` while this device's tag store imports nothing: other devices' changes that arrive meanwhile
    /// wait, and are imported as soon as it returns. A change this device makes in `body` is then made before it
    /// has seen theirs — concurrent with them, as two devices' edits are when both are made before either syncs —
    /// which is what a demonstration or a test of the merge needs.
    ///
    /// The hold is the coordinator's lock (``PersistentStoreCoordinator/lock()``, which every import takes), as the
    /// book takes it around adding its store; ``synchronize()`` in `body` sends and fetches but does not import.
    /// Open the store well before (``openTagStore()``): its first import after it is added runs on a task of its
    /// own, which would wait for the hold on one of the few threads Swift's tasks share.
    ///
    /// ```swift
    /// try await desktop.holdingTagImports {
    ///     try await laptop.setColor("green", ofTag: "Weekly")
    ///     try await desktop.setColor("red", ofTag: "Weekly")  // before the desktop has the laptop's green
    /// }
    /// ```
    /// - Throws: ``GroceryError/Code/storeFailed`` when the tag store cannot be opened, and what `body` throws.
    public func holdingTagImports<T>(_ body: () async throws -> T) async throws -> T {
        let coordinator = try await tagStore().coordinator
        let release = DispatchSemaphore(value: 0)
        // The lock belongs to the thread that takes it, and this actor's tasks resume on whichever thread runs them:
        // a thread of the hold's own takes the lock and keeps it until the hold ends.
        await withCheckedContinuation { (taken: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                coordinator.lock()
                taken.resume()
                release.wait()
                coordinator.unlock()
            }
        }
        tagImportHolds += 1
        defer {
            tagImportHolds -= 1
            release.signal()
        }
        return try await body()
    }
}
