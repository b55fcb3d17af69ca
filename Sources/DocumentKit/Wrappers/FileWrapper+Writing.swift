import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension FileWrapper {
    /// Implements ``write(to:options:originalContentsURL:)``.
    func writeTree(to url: URL, options: WritingOptions, originalContentsURL: URL?) throws {
        let destination = try SafeFileWriter.checkedFileURL(url)
        var ancestors: Set<ObjectIdentifier> = []
        try validateTree(at: destination, ancestors: &ancestors)
        let context = WriteContext(finalRoot: destination, originals: originalContentsURL?.standardizedFileURL)
        if options.contains(.atomic) {
            try SafeFileWriter.replaceItem(at: destination, synchronizesContents: false) { temporary in
                try self.writeItem(at: temporary, relativePath: [], context: context)
            }
        } else {
            if let originals = context.originals, Self.overlaps(originals, destination) { context.originals = nil }
            if try POSIX.lstatus(destination) != nil {
                do {
                    try FileManager.default.removeItem(atPath: destination.path)
                } catch {
                    throw FileWrapperError(
                        code: .writeFailed,
                        message: "cannot remove the existing item",
                        url: destination,
                        underlyingError: error
                    )
                }
            }
            do {
                try writeItem(at: destination, relativePath: [], context: context)
            } catch {
                SafeFileWriter.removeTree(at: destination)
                throw error
            }
            try SafeFileWriter.synchronizeDirectory(at: destination.deletingLastPathComponent())
        }
        if options.contains(.withNameUpdating) {
            for update in context.updates {
                update.wrapper.filename = update.relativePath.last ?? destination.lastPathComponent
                update.wrapper.attributesChanged = false
                if let written = update.origin { update.wrapper.origin = Self.settledOrigin(of: written) }
            }
        }
    }

    /// The origin of a file just written or linked, re-taken now that the save is complete: removing the
    /// old tree changed the link count, and so the status-change time, of linked files. `nil` if the file
    /// no longer has the contents written (someone modified it since).
    static func settledOrigin(of written: FileOrigin) -> FileOrigin? {
        let recordedAt = POSIX.now()
        guard let current = FileIdentity.ofRegularFile(atPath: written.url.path),
            current.isUnchanged(since: written.identity)
        else { return nil }
        return FileOrigin(url: written.url, identity: current, recordedAt: recordedAt)
    }

    /// What one write learns, applied to the wrappers with name updating once everything succeeded.
    final class WriteContext {
        struct Update {
            var wrapper: FileWrapper
            var relativePath: [String]
            var origin: FileOrigin?
        }

        let finalRoot: URL
        var originals: URL?
        var updates: [Update] = []

        init(finalRoot: URL, originals: URL?) {
            self.finalRoot = finalRoot
            self.originals = originals
        }

        func finalURL(_ relativePath: [String]) -> URL {
            relativePath.reduce(finalRoot) { $0.appendingPathComponent($1, isDirectory: false) }
        }
    }

    /// Whether one of the two locations is, or lies inside, the other.
    static func overlaps(_ first: URL, _ second: URL) -> Bool {
        let (a, b) = (first.path, second.path)
        return a == b || a.hasPrefix(b + "/") || b.hasPrefix(a + "/")
    }

    /// Throws if the tree cannot be written faithfully: refused names, bad link text, or a cycle.
    func validateTree(at url: URL, ancestors: inout Set<ObjectIdentifier>) throws(FileWrapperError) {
        switch storage {
        case .regularFile:
            return
        case .symbolicLink(let destination):
            guard !destination.isEmpty, !destination.utf8.contains(0), destination.utf8.count < Int(PATH_MAX) else {
                throw FileWrapperError(
                    code: .invalidSymbolicLinkDestination,
                    message: "cannot create a symbolic link to \(destination.debugDescription)",
                    url: url
                )
            }
        case .directory(let children):
            guard ancestors.insert(ObjectIdentifier(self)).inserted else {
                throw FileWrapperError(
                    code: .invalidStructure, message: "a directory wrapper contains itself", url: url)
            }
            for (key, child) in children {
                try MemberName.validate(key, in: url)
                try child.validateTree(at: url.appendingPathComponent(key, isDirectory: false), ancestors: &ancestors)
            }
            ancestors.remove(ObjectIdentifier(self))
        }
    }

    /// Writes this wrapper at `location`, which does not exist yet, syncing what it creates.
    func writeItem(at location: URL, relativePath: [String], context: WriteContext) throws(FileWrapperError) {
        switch storage {
        case .regularFile(let contents):
            let origin: FileOrigin
            if let linked = try linkUnchangedFile(to: location, relativePath: relativePath, context: context) {
                origin = linked
            } else {
                let recordedAt = POSIX.now()
                let identity = try SafeFileWriter.writeFile(
                    contents,
                    to: location,
                    permissions: requestedPermissions,
                    modificationDate: attributes[FileAttributeKey.modificationDate.rawValue] as? Date
                )
                origin = FileOrigin(url: context.finalURL(relativePath), identity: identity, recordedAt: recordedAt)
            }
            context.updates.append(.init(wrapper: self, relativePath: relativePath, origin: origin))
        case .directory(let children):
            guard mkdir(location.path, 0o777) == 0 else { throw .posix(.writeFailed, "mkdir", url: location) }
            for (key, child) in children.sorted(by: { $0.key < $1.key }) {
                try child.writeItem(
                    at: location.appendingPathComponent(key, isDirectory: false),
                    relativePath: relativePath + [key],
                    context: context
                )
            }
            // Sync before applying permissions, which may take away the read access fsync's open needs.
            try SafeFileWriter.synchronizeDirectory(at: location)
            if let permissions = requestedPermissions, chmod(location.path, permissions) != 0 {
                throw .posix(.writeFailed, "chmod", url: location)
            }
            context.updates.append(.init(wrapper: self, relativePath: relativePath))
        case .symbolicLink(let destination):
            guard symlink(destination, location.path) == 0 else {
                throw .posix(.writeFailed, "symlink", url: location)
            }
            context.updates.append(.init(wrapper: self, relativePath: relativePath))
        }
    }

    /// The `posixPermissions` attribute, if set.
    var requestedPermissions: mode_t? {
        guard let number = attributes[FileAttributeKey.posixPermissions.rawValue] as? NSNumber else { return nil }
        return mode_t(number.uint16Value & 0o7777)
    }

    /// Hard-links this regular-file wrapper's original to `location` if it is provably unchanged, and
    /// returns the linked file's new origin; `nil` if the contents must be written instead.
    private func linkUnchangedFile(
        to location: URL,
        relativePath: [String],
        context: WriteContext
    ) throws(FileWrapperError) -> FileOrigin? {
        guard let originals = context.originals, let origin, !attributesChanged,
            case .regularFile(let contents) = storage
        else { return nil }
        var candidates = [relativePath.reduce(originals) { $0.appendingPathComponent($1, isDirectory: false) }]
        if origin.url.path != candidates[0].path, origin.url.path.hasPrefix(originals.path + "/") {
            candidates.append(origin.url)
        }
        for source in candidates {
            guard FileIdentity.ofRegularFile(atPath: source.path) == origin.identity else { continue }
            if origin.isRacy, !Self.file(at: source, contains: contents) { continue }
            // EXDEV, EMLINK, EPERM (no hard links here): write the bytes instead.
            guard link(source.path, location.path) == 0 else { return nil }
            let recordedAt = POSIX.now()
            guard let linked = FileIdentity.ofRegularFile(atPath: location.path),
                linked.isUnchanged(since: origin.identity)
            else {
                unlink(location.path)
                return nil
            }
            // No fsync of the link: the original's contents are already on disk (a previous save synced them),
            // and the new directory entry is made durable by syncing its directory.
            return FileOrigin(url: context.finalURL(relativePath), identity: linked, recordedAt: recordedAt)
        }
        return nil
    }

    /// Whether the regular file at `url` holds exactly `contents`.
    private static func file(at url: URL, contains contents: Data) -> Bool {
        guard let node = try? readNode(at: url), case .regularFile(let onDisk) = node.storage else { return false }
        return onDisk == contents
    }
}
