import Foundation

extension FileCoordinator {
    /// A change to the versions of an item, as the sync layer tells presenters.
    public enum VersionChange: Sendable, Hashable {
        /// The item gained a version (a conflict version, usually).
        case gained(PresentedItemVersion)
        /// A version of the item went away.
        case lost(PresentedItemVersion)
        /// A conflict version of the item was resolved.
        case resolved(PresentedItemVersion)
    }

    /// Tells this process's presenters of the item at `url` — `presentedItemDidGain(_:)`, `presentedItemDidLose(_:)`,
    /// `presentedItemDidResolveConflict(_:)` — and the presenters of folders above it — the
    /// `presentedSubitem(at:didGain:)` forms — each on its own queue. The sync engine calls this when it learns of a
    /// version; an app in another process hears of it over the engine's socket and calls this in its own process.
    public static func announce(_ change: VersionChange, ofItemAt url: URL) {
        guard let path = try? CoordinationPath.canonical(url) else { return }
        for registered in FilePresenterRegistry.shared.registered(excluding: nil) {
            let presenter = registered.presenter
            if registered.path == path {
                presenter.presentedItemOperationQueue.addOperation {
                    switch change {
                    case .gained(let version): presenter.presentedItemDidGain(version)
                    case .lost(let version): presenter.presentedItemDidLose(version)
                    case .resolved(let version): presenter.presentedItemDidResolveConflict(version)
                    }
                }
            } else if CoordinationPath.isAncestor(registered.path, of: path) {
                let subitem = URL(fileURLWithPath: path)
                presenter.presentedItemOperationQueue.addOperation {
                    switch change {
                    case .gained(let version): presenter.presentedSubitem(at: subitem, didGain: version)
                    case .lost(let version): presenter.presentedSubitem(at: subitem, didLose: version)
                    case .resolved(let version): presenter.presentedSubitem(at: subitem, didResolve: version)
                    }
                }
            }
        }
    }
}
