import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension FileWrapper {
    /// What reading one item produced.
    struct Node {
        var storage: Storage
        var attributes: [String: Any]
        var origin: FileOrigin?
    }

    /// Implements ``read(from:options:)``.
    func reread(from url: URL) throws(FileWrapperError) {
        let node = try Self.readNode(at: url.standardizedFileURL)
        if case .directory(let children) = storage {
            for child in children.values { child.removeParent(self) }
        }
        storage = node.storage
        origin = node.origin
        attributes = node.attributes
        attributesChanged = false
        filename = url.lastPathComponent
        if storedPreferredFilename == nil { storedPreferredFilename = url.lastPathComponent }
        adoptChildren()
    }

    /// Reads the item at `url` without following a final symbolic link.
    static func readNode(at url: URL) throws(FileWrapperError) -> Node {
        guard let status = try POSIX.lstatus(url) else {
            throw .posix(.readFailed, "lstat", url: url, errno: ENOENT)
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            return try readRegularFile(at: url)
        case S_IFDIR:
            return Node(storage: .directory(try readDirectory(at: url)), attributes: attributes(of: status))
        case S_IFLNK:
            return Node(storage: .symbolicLink(try readLink(at: url)), attributes: attributes(of: status))
        default:
            throw FileWrapperError(
                code: .unsupportedFileType,
                message: "not a regular file, directory or symbolic link",
                url: url
            )
        }
    }

    /// Reads a regular file and records its identity, unless it changed while being read.
    private static func readRegularFile(at url: URL) throws(FileWrapperError) -> Node {
        let recordedAt = POSIX.now()
        // O_NONBLOCK: should the file have been replaced by a FIFO since lstat, open must not hang.
        let descriptor = try POSIX.openFile(url, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, failure: .readFailed)
        defer { close(descriptor) }
        var before = stat()
        guard fstat(descriptor, &before) == 0 else { throw .posix(.readFailed, "fstat", url: url) }
        guard before.st_mode & S_IFMT == S_IFREG else {
            throw FileWrapperError(code: .unsupportedFileType, message: "not a regular file", url: url)
        }
        let contents = try POSIX.readAll(descriptor, expectedSize: Int(before.st_size), url: url)
        var after = stat()
        guard fstat(descriptor, &after) == 0 else { throw .posix(.readFailed, "fstat", url: url) }
        let identity = FileIdentity(after)
        let unchanged = FileIdentity(before) == identity && Int64(contents.count) == identity.size
        let origin = unchanged ? FileOrigin(url: url, identity: identity, recordedAt: recordedAt) : nil
        return Node(storage: .regularFile(contents), attributes: attributes(of: after), origin: origin)
    }

    /// Reads a directory's members, refusing names that cannot be represented or written back.
    private static func readDirectory(at url: URL) throws(FileWrapperError) -> [String: FileWrapper] {
        guard let directory = opendir(url.path) else { throw .posix(.readFailed, "opendir", url: url) }
        defer { closedir(directory) }
        var children: [String: FileWrapper] = [:]
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 { throw .posix(.readFailed, "readdir", url: url) }
                return children
            }
            let name = String(validating: LinuxSystem.nameBytes(of: entry), as: UTF8.self)
            guard let name else {
                throw FileWrapperError(code: .invalidFilename, message: "a member name is not UTF-8", url: url)
            }
            if name == "." || name == ".." { continue }
            try MemberName.validate(name, in: url)
            let childURL = url.appendingPathComponent(name, isDirectory: false)
            let child = FileWrapper(node: try readNode(at: childURL), name: name)
            children[name] = child
        }
    }

    /// Reads a symbolic link's text.
    private static func readLink(at url: URL) throws(FileWrapperError) -> String {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = buffer.withUnsafeMutableBytes { bytes in
            readlink(url.path, bytes.baseAddress!.assumingMemoryBound(to: CChar.self), bytes.count)
        }
        guard count >= 0 else { throw .posix(.readFailed, "readlink", url: url) }
        guard let destination = String(validating: buffer[..<count], as: UTF8.self) else {
            throw FileWrapperError(
                code: .invalidSymbolicLinkDestination,
                message: "symbolic link destination is not UTF-8",
                url: url
            )
        }
        return destination
    }

    /// The ``fileAttributes`` describing `status`.
    static func attributes(of status: stat) -> [String: Any] {
        let type: FileAttributeType =
            switch status.st_mode & S_IFMT {
            case S_IFREG: .typeRegular
            case S_IFDIR: .typeDirectory
            case S_IFLNK: .typeSymbolicLink
            default: .typeUnknown
            }
        let seconds = Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1_000_000_000
        var attributes: [String: Any] = [
            FileAttributeKey.type.rawValue: type,
            FileAttributeKey.posixPermissions.rawValue: NSNumber(value: UInt16(status.st_mode & 0o7777)),
            FileAttributeKey.modificationDate.rawValue: Date(timeIntervalSince1970: seconds),
            FileAttributeKey.ownerAccountID.rawValue: NSNumber(value: UInt32(status.st_uid)),
            FileAttributeKey.groupOwnerAccountID.rawValue: NSNumber(value: UInt32(status.st_gid)),
        ]
        if type == .typeRegular { attributes[FileAttributeKey.size.rawValue] = NSNumber(value: Int64(status.st_size)) }
        return attributes
    }

    /// A child wrapper made from a node read from disk.
    convenience init(node: Node, name: String) {
        switch node.storage {
        case .regularFile(let contents): self.init(regularFileWithContents: contents)
        case .directory(let children): self.init(directoryWithFileWrappers: children)
        case .symbolicLink(let destination): self.init(symbolicLinkDestination: destination)
        }
        origin = node.origin
        attributes = node.attributes
        filename = name
        storedPreferredFilename = name
    }

    /// A symbolic-link wrapper storing `destination` verbatim.
    convenience init(symbolicLinkDestination destination: String) {
        self.init(regularFileWithContents: Data())
        storage = .symbolicLink(destination)
    }
}
