import Foundation

extension FileIdentity {
    /// The identity a presenter's item is watched by (``FileIdentity``): for a package, a hash of everything inside
    /// it too. A change notice is delivered only when the identity differs from the recorded one, which is how a
    /// process does not hear its own coordinated writes a second time through the file watcher.
    static func ofPresentedItem(atPath path: String) -> FileIdentity? {
        let isPackage = DocumentTypeRegistry.default.isPackageExtension((path as NSString).pathExtension)
        return of(path: path, members: isPackage)
    }
}
