/// One member of a package: its path inside the package, its kind and, for a file, its chunks.
public struct PackageEntry: Hashable, Sendable, Codable {
    /// The member's path relative to the package root (the same rules as any ``ItemPath``).
    public var path: ItemPath
    /// ``ItemKind/file`` or ``ItemKind/directory``; a package never nests another.
    public var kind: ItemKind
    /// The file's chunks in order; empty for a directory.
    public var chunks: [ChunkReference]

    /// Creates an entry.
    public init(path: ItemPath, kind: ItemKind, chunks: [ChunkReference] = []) {
        self.path = path
        self.kind = kind
        self.chunks = chunks
    }
}
