import Foundation

extension LocalItem {
    /// Whether the local copy differs from the version it was last in step with — edited here and not yet uploaded,
    /// or never uploaded. A placeholder, or an item whose file is gone, has none.
    public func hasLocalChanges(in layout: ContainerLayout) -> Bool {
        guard !isPlaceholder else { return false }
        guard let identity, baseVersion != nil else { return true }
        let url = layout.url(of: path)
        guard let now = try? LocalScanner().identity(of: url, kind: kind) else {
            // There, or maybe there (below a folder whose permissions were taken away), but not to be looked at
            // whole: not known to be unchanged.
            return PosixDisk().exists(url)
        }
        return !now.isUnchanged(since: identity)
    }
}
