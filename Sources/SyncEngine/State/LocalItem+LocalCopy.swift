import Foundation

extension LocalItem {
    /// Whether the local copy differs from the version it was last in step with — edited here and not yet uploaded,
    /// or never uploaded. A placeholder, or an item whose file is gone, has none.
    public func hasLocalChanges(in layout: ContainerLayout) -> Bool {
        guard !isPlaceholder else { return false }
        guard let identity, baseVersion != nil else { return true }
        guard let now = try? LocalScanner().identity(of: layout.url(of: path), kind: kind) else { return false }
        return !now.isUnchanged(since: identity)
    }
}
