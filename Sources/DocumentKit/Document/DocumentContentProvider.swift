import Foundation
import Synchronization

/// Brings a document's file onto this machine before it is read. The sync layer registers one (UbiquityKit does
/// when it is configured), so that opening a ``Document`` whose file is a placeholder — a synced item whose content
/// is still on the service — downloads it first, with progress on the document, as a UIDocument does.
public protocol DocumentContentProvider: Sendable {
    /// Whether the file at `url` is a placeholder this provider can download (`false` for any file it does not
    /// manage, or one already here).
    func needsDownload(at url: URL) -> Bool

    /// Downloads the file at `url`, reporting bytes done and bytes in all as it goes; returns when the content is
    /// in place.
    func download(at url: URL, progress: @escaping @Sendable (_ completed: Int64, _ total: Int64) -> Void) async throws
}

/// The content providers of this process.
public enum DocumentContentProviders {
    private static let providers = Mutex<[(id: ObjectIdentifier, provider: any DocumentContentProvider)]>([])

    /// Adds `provider` under `owner`'s identity (registering the same owner again replaces its provider).
    public static func register(_ provider: any DocumentContentProvider, owner: AnyObject) {
        let id = ObjectIdentifier(owner)
        providers.withLock { list in
            list.removeAll { $0.id == id }
            list.append((id, provider))
        }
    }

    /// Removes `owner`'s provider.
    public static func unregister(owner: AnyObject) {
        let id = ObjectIdentifier(owner)
        providers.withLock { list in list.removeAll { $0.id == id } }
    }

    /// The provider that must download `url` before it is read, if any.
    static func provider(downloading url: URL) -> (any DocumentContentProvider)? {
        providers.withLock { list in list.map(\.provider) }.first { $0.needsDownload(at: url) }
    }
}

extension Document {
    /// Downloads the document's file first when it is a placeholder, with ``progress`` set meanwhile.
    /// - Throws: ``DocumentError/Code/downloadFailed`` when the download fails.
    func downloadIfNeeded() async throws {
        guard let provider = DocumentContentProviders.provider(downloading: fileURL) else { return }
        // In percent: Foundation's Progress on Linux traps when its total changes under way.
        let progress = Progress(totalUnitCount: 100)
        self.progress = progress
        defer { self.progress = nil }
        do {
            try await provider.download(at: fileURL) { [weak self] completed, total in
                // Progress belongs to the main actor, as the document does.
                Task { @MainActor in
                    guard let progress = self?.progress else { return }
                    progress.completedUnitCount = total > 0 ? min(100, completed * 100 / total) : 100
                }
            }
        } catch let error as DocumentError {
            throw error
        } catch {
            throw DocumentError(.downloadFailed, "could not download \(fileURL.path)", underlying: error)
        }
    }
}
