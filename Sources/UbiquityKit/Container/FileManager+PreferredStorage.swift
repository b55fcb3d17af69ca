import Foundation

extension FileManager {
    /// Moves every item of a folder into a container folder (`flag` true) or every item of a container folder out
    /// of it (`flag` false) — the seeds' "move all documents to iCloud / back" switch in one call. Each item moves
    /// with ``setUbiquitous(_:itemAt:destinationURL:)``, in name order; hidden items stay.
    ///
    /// ```swift
    /// let cloud = FileManager.default.url(forUbiquityContainerIdentifier: nil)!.appendingPathComponent("Documents")
    /// try FileManager.default.setUbiquitous(true, itemsIn: localDocuments, destinationFolder: cloud)
    /// ```
    /// - Returns: Where each item is now.
    /// - Throws: The first item's error (see ``setUbiquitous(_:itemAt:destinationURL:)``); items moved before it
    ///   stay moved, the failed one and those after it stay where they were.
    @discardableResult
    public func setUbiquitous(_ flag: Bool, itemsIn folder: URL, destinationFolder: URL) throws -> [URL] {
        let names = try contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }.sorted()
        var moved: [URL] = []
        for name in names {
            let destination = destinationFolder.appendingPathComponent(name)
            try setUbiquitous(flag, itemAt: folder.appendingPathComponent(name), destinationURL: destination)
            moved.append(destination)
        }
        return moved
    }
}
