import DocumentKit
import Foundation
import SyncEngine
import Synchronization
import UbiquityProtocol

/// Downloads a document's file before it is opened when it is a placeholder: registered with DocumentKit by each
/// ``Ubiquity`` instance for the URLs under its root.
final class UbiquityContentProvider: DocumentContentProvider {
    let owner = Mutex<WeakUbiquity?>(nil)

    /// How long an open waits for content whose record arrived first.
    let contentWait = Duration.seconds(30)

    private var ubiquity: Ubiquity? { owner.withLock { $0?.value } }

    /// The item's next recorded change with a current version, or `nil` when `deadline` passes first.
    private static func nextChange(
        of id: ItemID, in events: AsyncStream<SyncEvent>, until deadline: ContinuousClock.Instant
    ) async -> LocalItem? {
        await withTaskGroup(of: LocalItem?.self) { group in
            group.addTask {
                for await event in events {
                    if case .itemChanged(let item) = event, item.id == id, item.serverVersion != nil { return item }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(until: deadline)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    func needsDownload(at url: URL) -> Bool {
        guard let ubiquity, (try? ubiquity.locate(url)) != nil else { return false }
        return !FileManager.default.fileExists(atPath: url.path)
    }

    func download(at url: URL, progress: @escaping @Sendable (Int64, Int64) -> Void) async throws {
        guard let ubiquity else { throw UbiquityError(.engineUnavailable, "UbiquityKit was shut down") }
        let (container, path) = try ubiquity.locate(url)
        let session = try await ubiquity.session(for: container)
        guard let item = try await session.withEngine({ try await $0.item(at: path) }) else {
            throw DocumentError(.fileNotFound, "\(url.path) does not exist")
        }
        let events = session.events()
        // Hands the item's transfer progress to the document until the download returns (which cancels it).
        let reporter = Task {
            for await event in events {
                if case .progress(let id, _, let transfer?) = event, id == item.id {
                    progress(transfer.completed, transfer.total)
                }
            }
        }
        defer { reporter.cancel() }
        progress(0, item.size)
        let deadline = ContinuousClock.now + contentWait
        while true {
            let updates = session.events()
            try await session.download(path)
            if FileManager.default.fileExists(atPath: url.path) { break }
            // The record came before its content (the other device is still uploading it): wait for the content.
            await session.refresh(path)
            var arrived = session.item(at: path)?.serverVersion != nil
            if !arrived, ContinuousClock.now < deadline {
                arrived = await Self.nextChange(of: item.id, in: updates, until: deadline) != nil
            }
            guard arrived, ContinuousClock.now < deadline else {
                throw UbiquityError(.notDownloaded, "the content of \(url.path) is not on the service yet")
            }
        }
        progress(item.size, item.size)
    }
}
