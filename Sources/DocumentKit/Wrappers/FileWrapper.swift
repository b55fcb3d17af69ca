import Foundation

/// A file, directory or symbolic link held in memory: the equivalent of Foundation's `FileWrapper`,
/// which swift-corelibs-foundation lacks.
///
/// Read a document package with ``init(url:options:)``, edit its members with ``addFileWrapper(_:)``
/// and ``removeFileWrapper(_:)``, and save it with ``write(to:options:originalContentsURL:)``.
///
/// Saving is incremental: a regular-file member read from disk remembers the file it came from and that
/// file's identity (device, inode, size, times). When you write a package with `originalContentsURL`
/// pointing at the previous copy, members that did not change are hard-linked from there instead of
/// being rewritten. With ``WritingOptions/withNameUpdating`` the members then remember their new home,
/// so the next save links again.
///
/// ```swift
/// let package = try FileWrapper(url: documentURL)
/// if let old = package.fileWrappers?["text.txt"] { package.removeFileWrapper(old) }
/// package.addRegularFile(withContents: Data("new text".utf8), preferredFilename: "text.txt")
/// try package.write(to: documentURL, options: [.atomic, .withNameUpdating], originalContentsURL: documentURL)
/// ```
///
/// Contents are always read eagerly with plain `read(2)` calls — never memory-mapped — so a wrapper keeps
/// the bytes it was read with even if the file is later truncated or rewritten in place (a mapped file
/// truncated in place would crash the process with `SIGBUS`).
///
/// Names of members must be usable as a single path component: writing or reading a tree with a name that
/// is empty, `.` or `..`, contains `/` or NUL, or exceeds 255 bytes throws
/// ``FileWrapperError/Code/invalidFilename`` before anything is written.
///
/// Like Foundation's class, `FileWrapper` is not `Sendable`: use one wrapper tree from one task at a time.
open class FileWrapper {
    /// Options for reading a wrapper from disk.
    public struct ReadingOptions: OptionSet, Sendable {
        /// The raw bits.
        public let rawValue: UInt
        /// Creates options from raw bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Read all contents at once. Contents are always read at once, so this changes nothing.
        public static let immediate = ReadingOptions(rawValue: 1 << 0)
        /// Do not memory-map file contents. Contents are never mapped, so this changes nothing.
        public static let withoutMapping = ReadingOptions(rawValue: 1 << 1)
    }

    /// Options for writing a wrapper to disk.
    public struct WritingOptions: OptionSet, Sendable {
        /// The raw bits.
        public let rawValue: UInt
        /// Creates options from raw bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Write the whole item under a temporary name, sync it, then move it over the destination, so
        /// that a crash leaves the old or the new item, never a mixture.
        public static let atomic = WritingOptions(rawValue: 1 << 0)
        /// After writing, set each wrapper's ``filename`` to the name it was written under and make
        /// members remember their new location for the next incremental save.
        public static let withNameUpdating = WritingOptions(rawValue: 1 << 1)
    }

    /// What the wrapper holds.
    enum Storage {
        case regularFile(Data)
        case directory([String: FileWrapper])
        case symbolicLink(String)
    }

    /// A reference to a directory wrapper that contains this one, held weakly so trees free themselves.
    struct ParentReference {
        weak var wrapper: FileWrapper?
    }

    /// The contents.
    var storage: Storage
    /// For a regular file read from or written to disk: that file and its identity at the time.
    var origin: FileOrigin?
    /// Whether ``fileAttributes`` was assigned since the wrapper was last read or written with name updating.
    var attributesChanged = false
    /// The directory wrappers this wrapper is a child of.
    var parents: [ParentReference] = []
    /// The attributes, in ``fileAttributes`` form.
    var attributes: [String: Any] = [:]
    /// The backing store of ``preferredFilename``.
    var storedPreferredFilename: String?

    /// The name of the file on disk the wrapper was last read from or written to (with name updating),
    /// or `nil` for a wrapper made in memory.
    open var filename: String?

    /// The name the wrapper would like to be stored under in a directory wrapper.
    ///
    /// Setting it on a wrapper that is a child of directory wrappers re-keys it in each of them, as
    /// ``addFileWrapper(_:)`` would (a clashing name gets a unique variant).
    open var preferredFilename: String? {
        get { storedPreferredFilename }
        set {
            storedPreferredFilename = newValue
            guard let newValue, !newValue.isEmpty else { return }
            for parent in parents.compactMap(\.wrapper) { parent.rekey(self, preferring: newValue) }
        }
    }

    /// The file attributes, keyed by `FileAttributeKey` raw values.
    ///
    /// Reading fills in `type`, `size` (regular files), `posixPermissions`, `modificationDate`,
    /// `ownerAccountID` and `groupOwnerAccountID`. Writing applies `posixPermissions` (exactly, ignoring
    /// the umask) to regular files and directories and `modificationDate` to regular files; other keys are
    /// ignored. Assigning this property makes the next write rewrite the file rather than hard-link it.
    open var fileAttributes: [String: Any] {
        get { attributes }
        set {
            attributes = newValue
            attributesChanged = true
        }
    }

    /// Reads the file, directory or symbolic link at `url` (a symbolic link is not followed).
    ///
    /// The wrapper's ``filename`` and ``preferredFilename`` become `url.lastPathComponent`.
    ///
    /// - Parameters:
    ///   - url: A file URL.
    ///   - options: Accepted for compatibility; contents are always read at once and never mapped.
    /// - Throws: ``FileWrapperError``: `noSuchFile`, `invalidFilename` for a member whose name is
    ///   refused (for example not valid UTF-8), `unsupportedFileType` for sockets, FIFOs and devices,
    ///   `readFailed`.
    public init(url: URL, options: ReadingOptions = []) throws {
        let node = try Self.readNode(at: url.standardizedFileURL)
        storage = node.storage
        origin = node.origin
        attributes = node.attributes
        filename = url.lastPathComponent
        storedPreferredFilename = url.lastPathComponent
        adoptChildren()
    }

    /// Creates a directory wrapper with the given children, keyed by name.
    ///
    /// A child without a ``preferredFilename`` gets its key as preferred filename. Keys are not checked
    /// here; writing a tree with a refused key throws ``FileWrapperError/Code/invalidFilename``.
    ///
    /// - Parameter childrenByPreferredName: The children, keyed by the names to store them under.
    public init(directoryWithFileWrappers childrenByPreferredName: [String: FileWrapper]) {
        storage = .directory(childrenByPreferredName)
        for (key, child) in childrenByPreferredName where child.storedPreferredFilename == nil {
            child.storedPreferredFilename = key
        }
        adoptChildren()
    }

    /// Creates a regular-file wrapper with the given contents.
    ///
    /// - Parameter contents: The file's bytes.
    public init(regularFileWithContents contents: Data) {
        storage = .regularFile(contents)
    }

    /// Creates a symbolic-link wrapper pointing at `url`.
    ///
    /// The link stores `url.relativePath`, so `URL(fileURLWithPath: "../shared")` makes a relative link.
    ///
    /// - Parameter url: The link's destination.
    public init(symbolicLinkWithDestinationURL url: URL) {
        storage = .symbolicLink(url.relativePath)
    }

    /// Whether the wrapper is a regular file.
    open var isRegularFile: Bool {
        if case .regularFile = storage { return true }
        return false
    }

    /// Whether the wrapper is a directory.
    open var isDirectory: Bool {
        if case .directory = storage { return true }
        return false
    }

    /// Whether the wrapper is a symbolic link.
    open var isSymbolicLink: Bool {
        if case .symbolicLink = storage { return true }
        return false
    }

    /// The contents of a regular-file wrapper; `nil` for other kinds.
    open var regularFileContents: Data? {
        if case .regularFile(let contents) = storage { return contents }
        return nil
    }

    /// The children of a directory wrapper, keyed by the names they are stored under; `nil` for other kinds.
    open var fileWrappers: [String: FileWrapper]? {
        if case .directory(let children) = storage { return children }
        return nil
    }

    /// The destination of a symbolic-link wrapper; `nil` for other kinds. A relative destination is
    /// returned as a URL whose `relativePath` is the link's text.
    open var symbolicLinkDestinationURL: URL? {
        if case .symbolicLink(let destination) = storage { return URL(fileURLWithPath: destination) }
        return nil
    }

    /// Re-reads the whole wrapper from `url`, replacing its contents, children and attributes.
    ///
    /// Nothing changes if reading fails. ``filename`` becomes `url.lastPathComponent`; the
    /// ``preferredFilename`` is kept (or set to the same name if it was `nil`).
    ///
    /// - Parameters:
    ///   - url: A file URL.
    ///   - options: Accepted for compatibility; contents are always read at once and never mapped.
    /// - Throws: ``FileWrapperError`` as ``init(url:options:)`` does.
    open func read(from url: URL, options: ReadingOptions = []) throws {
        try reread(from: url)
    }

    /// Writes the wrapper — a file, a directory tree or a symbolic link — to `url`.
    ///
    /// The whole tree is checked first; a refused member name, an unwritable symbolic link or a tree
    /// containing itself throws before anything touches the disk.
    ///
    /// **Incremental saving.** When `originalContentsURL` is given, a regular-file member that was read
    /// from disk (or written with ``WritingOptions/withNameUpdating``), whose contents were never replaced
    /// and whose ``fileAttributes`` were not reassigned, is hard-linked from
    /// `originalContentsURL/<its path in the tree>` instead of being rewritten — provided that file still
    /// has the identity (device, inode, size, modification and status-change times) it had when the
    /// wrapper read or wrote it. A file modified since then is not linked: the wrapper's own contents are
    /// written. If linking fails (another volume, link limit, no hard links on the file system) the bytes
    /// are written. If the file was modified within ~50 ms before its identity was taken, a later
    /// same-size modification could have left its times unchanged; such a file is linked only after its
    /// contents were compared with the wrapper's. Wrappers made in memory are always written.
    ///
    /// **Atomic writing** (``WritingOptions/atomic``) goes through
    /// ``SafeFileWriter/replaceItem(at:synchronizesContents:writingWith:)``: the tree is written under a
    /// hidden temporary sibling, every file and directory is synced, and the result replaces `url` in one
    /// rename (an exchange for directories). `originalContentsURL` may be `url` itself.
    ///
    /// **Non-atomic writing** removes any item at `url` and writes in place. Files are still synced, but a
    /// crash can leave a partial item. Members are not linked when `originalContentsURL` is, contains or
    /// lies inside `url`, since the originals are removed first.
    ///
    /// Regular files and directories get the `posixPermissions` in ``fileAttributes``; regular files also
    /// get its `modificationDate`.
    ///
    /// - Parameters:
    ///   - url: Where to write; its directory must exist.
    ///   - options: ``WritingOptions/atomic`` and ``WritingOptions/withNameUpdating``.
    ///   - originalContentsURL: The previous copy of the item, whose unchanged members may be hard-linked.
    /// - Throws: ``FileWrapperError``: `invalidFilename`, `invalidSymbolicLinkDestination`,
    ///   `invalidStructure` or `invalidURL` before writing anything; `writeFailed` if the disk refuses.
    open func write(to url: URL, options: WritingOptions = [], originalContentsURL: URL?) throws {
        try writeTree(to: url, options: options, originalContentsURL: originalContentsURL)
    }

    /// Adds `child` to this directory wrapper and returns the key it is stored under.
    ///
    /// The key is the child's ``preferredFilename``, or — if that is taken — a unique variant with a
    /// number before the extension: "notes.txt", "notes 2.txt", "notes 3.txt"… Adding a child that is
    /// already in this directory returns its existing key. The name is not checked here: writing a tree
    /// containing a refused name (such as "../x") throws ``FileWrapperError/Code/invalidFilename``.
    ///
    /// - Precondition: This wrapper is a directory, `child` is not this wrapper, and `child` has a
    ///   non-empty ``preferredFilename`` (Foundation raises an exception in these cases).
    /// - Parameter child: The wrapper to add.
    /// - Returns: The key `child` is stored under.
    @discardableResult
    open func addFileWrapper(_ child: FileWrapper) -> String {
        addChild(child)
    }

    /// Creates a regular-file wrapper with `contents` and `preferredFilename`, adds it to this directory
    /// wrapper, and returns its key (see ``addFileWrapper(_:)`` for how clashes are resolved).
    ///
    /// - Precondition: This wrapper is a directory and `preferredFilename` is not empty.
    /// - Parameters:
    ///   - contents: The new file's bytes.
    ///   - preferredFilename: The name to store it under.
    /// - Returns: The key the new wrapper is stored under.
    @discardableResult
    open func addRegularFile(withContents contents: Data, preferredFilename: String) -> String {
        addRegularFileChild(withContents: contents, preferredFilename: preferredFilename)
    }

    /// Removes `child` from this directory wrapper; does nothing if it is not a child.
    ///
    /// - Parameter child: The wrapper to remove (compared by identity).
    open func removeFileWrapper(_ child: FileWrapper) {
        removeChild(child)
    }

    /// The key under which `child` is stored in this directory wrapper, or `nil` if it is not a child.
    ///
    /// - Parameter child: The wrapper to look up (compared by identity).
    open func keyForFileWrapper(_ child: FileWrapper) -> String? {
        key(for: child)
    }

    /// Whether the item at `url` has the same contents as this wrapper: same kind, same bytes for a
    /// regular file, same destination for a symbolic link, and for a directory the same member names with
    /// matching contents, recursively. Attributes are not compared. `false` if `url` cannot be read.
    ///
    /// - Parameter url: The item to compare with.
    open func matchesContents(of url: URL) -> Bool {
        contentsMatch(url)
    }

    /// Whether the wrapper is out of date with respect to the item at `url`, judged by identity rather
    /// than by reading contents: `true` if the kind differs, a regular file's identity (inode, size, times)
    /// differs from when the wrapper read or wrote it (or the wrapper was made in memory), a symbolic
    /// link's destination differs, or a directory gained or lost members or any member needs updating.
    ///
    /// - Parameter url: The item the wrapper was read from or written to.
    open func needsToBeUpdated(from url: URL) -> Bool {
        isOutdated(comparedWith: url)
    }

    /// Same as ``needsToBeUpdated(from:)`` with a path.
    ///
    /// - Parameter path: The path of the item the wrapper was read from or written to.
    open func needsToBeUpdated(fromPath path: String) -> Bool {
        isOutdated(comparedWith: URL(fileURLWithPath: path))
    }

    /// Records `self` as the parent of each of its children.
    func adoptChildren() {
        guard case .directory(let children) = storage else { return }
        for child in children.values { child.addParent(self) }
    }

    /// Records `parent` as a directory containing `self`, once.
    func addParent(_ parent: FileWrapper) {
        parents.removeAll { $0.wrapper == nil }
        if !parents.contains(where: { $0.wrapper === parent }) { parents.append(ParentReference(wrapper: parent)) }
    }

    /// Forgets `parent` as a directory containing `self`.
    func removeParent(_ parent: FileWrapper) {
        parents.removeAll { $0.wrapper == nil || $0.wrapper === parent }
    }
}
