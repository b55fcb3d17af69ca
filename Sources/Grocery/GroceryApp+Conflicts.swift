import DocumentKit
import Foundation
import UbiquityKit

extension GroceryApp {
    /// One version of an item, as `grocery conflicts` shows it.
    public struct VersionSummary: Hashable, Sendable {
        /// The version's persistent identifier (what `resolve --keep` takes).
        public var id: String
        /// Whether it is the current version (else a conflict version).
        public var isCurrent: Bool
        /// The device that saved it.
        public var savingComputer: String?
        /// When it was saved.
        public var modificationDate: Date?
        /// The item's name in that version (`nil` when its contents could not be had).
        public var name: String?
    }

    /// What to keep when resolving a conflict.
    public enum Resolution: Hashable, Sendable {
        /// The current version.
        case current
        /// The version with this persistent identifier (or a prefix of it).
        case version(String)
    }

    /// The current version of the item and its unresolved conflict versions, with the name each holds.
    public func conflicts(of reference: String) async throws -> [VersionSummary] {
        let entry = try await find(reference)
        guard let current = FileVersion.currentVersionOfItem(at: entry.url) else {
            throw GroceryError(.noSuchVersion, "\(entry.displayName) has no version on the service yet")
        }
        var summaries = [await summary(current, isCurrent: true)]
        for version in FileVersion.unresolvedConflictVersionsOfItem(at: entry.url) ?? [] {
            summaries.append(await summary(version, isCurrent: false))
        }
        return summaries
    }

    private func summary(_ version: FileVersion, isCurrent: Bool) async -> VersionSummary {
        let contents = try? await version.contentsURL()
        let name = contents.flatMap {
            FileManager.default.contents(atPath: $0.appendingPathComponent(GroceryItemDocument.nameFile).path)
        }
        return VersionSummary(
            id: version.persistentIdentifier, isCurrent: isCurrent,
            savingComputer: version.localizedNameOfSavingComputer, modificationDate: version.modificationDate,
            name: name.map { String(decoding: $0, as: UTF8.self) })
    }

    /// Resolves the item's conflict the seeds' way: if a conflict version wins, it replaces the item; every
    /// conflict version is marked resolved; the other versions are removed. Every device sees the result.
    /// - Returns: The name the item holds now.
    @discardableResult
    public func resolve(_ reference: String, keeping resolution: Resolution) async throws -> String? {
        let entry = try await find(reference)
        let url = entry.url
        let conflicts = FileVersion.unresolvedConflictVersionsOfItem(at: url) ?? []
        guard !conflicts.isEmpty else {
            throw GroceryError(.noSuchVersion, "\(entry.displayName) is not in conflict")
        }
        if case .version(let wanted) = resolution {
            let matches = conflicts.filter { $0.persistentIdentifier.hasPrefix(wanted) }
            guard matches.count == 1, let winner = matches.first else {
                let ids = conflicts.map(\.persistentIdentifier).joined(separator: ", ")
                throw GroceryError(
                    .noSuchVersion,
                    matches.isEmpty
                        ? "\(entry.displayName) has no conflict version \(wanted); its conflict versions: \(ids)"
                        : "\(wanted) matches several versions; give more of it")
            }
            // Step 1: the winner's contents become the item's (a coordinated replacement, as the seeds do it).
            _ = try await Task.detached {
                try FileCoordinator(filePresenter: nil).coordinate(writingItemAt: url, options: .forReplacing) {
                    try winner.replaceItem(at: $0)
                }
            }.value
        }
        // Step 2: every conflict version is resolved. Step 3: the other versions go.
        for version in conflicts { version.isResolved = true }
        try FileVersion.removeOtherVersionsOfItem(at: url)
        let name = url.appendingPathComponent(GroceryItemDocument.nameFile)
        return FileManager.default.contents(atPath: name.path).map { String(decoding: $0, as: UTF8.self) }
    }
}
