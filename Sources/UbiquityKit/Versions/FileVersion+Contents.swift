import Foundation
import SyncEngine
import UbiquityProtocol

extension FileVersion {
    /// The URL of the version's contents on this machine, downloading them first when they are not here — what
    /// Apple's synchronous ``url`` would have to wait for. Another version's contents land in the container's private
    /// folder (never in `Documents/`) and stay until the version is removed; the current version's are the item's
    /// own file.
    ///
    /// ```swift
    /// for version in FileVersion.unresolvedConflictVersionsOfItem(at: url) ?? [] {
    ///     let text = try String(contentsOf: try await version.contentsURL(), encoding: .utf8)
    /// }
    /// ```
    /// - Throws: ``UbiquityError/Code/unknownVersion`` when the service no longer has the version;
    ///   ``UbiquityError/Code/itemNotFound``; ``UbiquityError/Code/engineUnavailable``; ``UbiquityError/Code/failed``
    ///   when the service cannot be reached.
    public func contentsURL() async throws -> URL {
        if hasLocalContents { return url }
        let (ubiquity, container, path) = try FileManager.locate(itemURL)
        let session = try await ubiquity.session(for: container)
        guard record != nil else {
            try await FileManager.engineCall { try await session.download(path) }
            return url
        }
        return try await FileManager.engineCall {
            try await session.withEngine { try await $0.contents(of: id, at: path) }
        }
    }
}
