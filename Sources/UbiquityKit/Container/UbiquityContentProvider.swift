import DocumentKit
import Foundation
import SyncEngine
import Synchronization
import UbiquityProtocol

/// Downloads a document's file before it is opened when it is a placeholder: registered with DocumentKit by each
/// ``Ubiquity`` instance for the URLs under its root.
final class UbiquityContentProvider: DocumentContentProvider {
    let owner = Mutex<WeakUbiquity?>(nil)

    private var ubiquity: Ubiquity? { owner.withLock { $0?.value } }

    func needsDownload(at url: URL) -> Bool {
        guard let ubiquity, (try? ubiquity.locate(url)) != nil else { return false }
        return !FileManager.default.fileExists(atPath: url.path)
    }

    func download(at url: URL, progress: @escaping @Sendable (Int64, Int64) -> Void) async throws {
        guard let ubiquity else { throw UbiquityError(.engineUnavailable, "UbiquityKit was shut down") }
        let (container, path) = try ubiquity.locate(url)
        let session = try await ubiquity.session(for: container)
        guard let item = try await session.connection.item(at: path) else {
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
        try await session.download(path)
        progress(item.size, item.size)
    }
}
