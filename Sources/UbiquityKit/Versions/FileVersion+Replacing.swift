import DocumentKit
import Foundation
import SyncEngine
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension FileVersion {
    /// How ``FileVersion/replaceItem(at:options:)`` treats the version's contents (Apple's
    /// `NSFileVersion.ReplacingOptions`).
    public struct ReplacingOptions: OptionSet, Sendable {
        /// The options' bits.
        public let rawValue: UInt
        /// Creates options from bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Move the version's downloaded contents to the item instead of copying them. (Replacing its own item, a
        /// version's contents always move: the version is the item's current one then, and needs no copy of its
        /// own.)
        public static let byMoving = ReplacingOptions(rawValue: 1 << 0)
    }

    /// Replaces the item at `url` with this version's contents, with a coordinated write (an open document of the
    /// item reverts to them by itself when it has no unsaved changes), and returns `url`.
    ///
    /// Replacing the version's own item makes this version the item's current one: on this device at once (the
    /// contents are in place when this returns, ``currentVersionOfItem(at:)`` is this version, and a conflict
    /// version chosen so is resolved) and, through the engine's queue, on the service and every device — at once
    /// when the service is reachable, when it is back otherwise. The engine then finds the contents it expects and
    /// uploads nothing. (The service, not a new upload, makes the version current: an upload of the same contents
    /// would be recognised as that conflict version, which the service never stores twice.) The version that was
    /// current becomes an other version; ``removeOtherVersionsOfItem(at:)`` removes it too.
    ///
    /// Replacing another URL only copies the contents there (inside a container, the engine uploads them as an edit
    /// of that item).
    ///
    /// The contents must be on this machine (``hasLocalContents``): get them first with ``contentsURL()``. Like
    /// Apple's, this call waits for the coordinated write, on the calling thread.
    /// - Parameters:
    ///   - url: The item to replace, usually the version's own.
    ///   - options: ``ReplacingOptions/byMoving`` to move rather than copy.
    /// - Returns: `url`.
    /// - Throws: ``UbiquityError/Code/notDownloaded`` when the contents are not here;
    ///   ``UbiquityError/Code/unknownVersion`` when the version is no longer one of the item's;
    ///   ``UbiquityError/Code/engineUnavailable`` when the container is not open; a coordination or file-system
    ///   error.
    @discardableResult
    public func replaceItem(at url: URL, options: ReplacingOptions = []) throws -> URL {
        guard hasLocalContents else {
            throw UbiquityError(
                .notDownloaded,
                "the contents of version \(persistentIdentifier) of \(itemURL.path) are not on this machine; "
                    + "get them with contentsURL() first")
        }
        let target = url.standardizedFileURL
        if target.path == itemURL.standardizedFileURL.path {
            if record != nil { try replaceOwnItem() }
            return url
        }
        try copyContents(to: target, moving: options.contains(.byMoving) && record != nil)
        return url
    }

    /// Makes this version current here and queues the same for the service, and moves its contents in place, both
    /// inside one coordinated write of the item.
    private func replaceOwnItem() throws {
        let item = try VersionedItem.locate(itemURL)
        let (source, id, itemID) = (url, id, itemID)
        let aside = item.session.layout.temporary.appendingPathComponent(
            UUID().uuidString.lowercased(), isDirectory: false)
        try FileCoordinator(filePresenter: nil).coordinate(writingItemAt: itemURL, options: .forReplacing) { target in
            try item.change(of: itemID, .replaceCurrent(id))
            do {
                try Self.put(source, at: target, movingAsideTo: aside)
            } catch {
                throw UbiquityError(
                    .failed,
                    "version \(id) is current now, but its contents could not be put at \(target.path) (\(error)); "
                        + "the engine brings them down when it syncs")
            }
        }
        try? FileManager.default.removeItem(at: source.deletingLastPathComponent())
    }

    /// Copies (or moves) the version's contents over `target`, with a coordinated write.
    private func copyContents(to target: URL, moving: Bool) throws {
        let source = url
        let staged = target.deletingLastPathComponent().appendingPathComponent(
            ".\(target.lastPathComponent).\(UUID().uuidString.lowercased())")
        let aside = staged.appendingPathExtension("old")
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileCoordinator(filePresenter: nil).coordinate(writingItemAt: target, options: .forReplacing) { target in
            if moving {
                try FileManager.default.moveItem(at: source, to: staged)
            } else {
                try FileManager.default.copyItem(at: source, to: staged)
            }
            do {
                try Self.put(staged, at: target, movingAsideTo: aside)
            } catch {
                try? FileManager.default.removeItem(at: staged)
                throw error
            }
        }
    }

    /// Renames `source` over `destination` (one atomic step for a file; a package in the way is moved aside to
    /// `aside` first, and removed after).
    private static func put(_ source: URL, at destination: URL, movingAsideTo aside: URL) throws {
        try FileManager.default.createDirectory(
            at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: destination.path, isDirectory: &isDirectory), isDirectory.boolValue {
            try FileManager.default.createDirectory(
                at: aside.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.moveItem(at: destination, to: aside)
        }
        guard rename(source.path, destination.path) == 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            if FileManager.default.fileExists(atPath: aside.path) {
                try? FileManager.default.moveItem(at: aside, to: destination)
            }
            throw error
        }
        try? FileManager.default.removeItem(at: aside)
    }
}
