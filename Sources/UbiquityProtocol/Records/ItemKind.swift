/// What an item is.
public enum ItemKind: String, Hashable, Sendable, Codable, CaseIterable {
    /// A flat file; its content is a list of chunks.
    case file
    /// A package: a folder that is one document (a `FileWrapper` tree), synced as a unit.
    case package
    /// A plain folder; it has no content of its own.
    case directory
}
