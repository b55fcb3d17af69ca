import Foundation

/// A declared document type: the Linux equivalent of a uniform type identifier (UTI) declaration.
///
/// A type has a reverse-DNS identifier, the identifiers of the types it conforms to, and the filename extensions that
/// name it. A type that conforms to ``DocumentType/packageIdentifier`` (`com.apple.package`) is a package: a directory
/// that users and the sync service treat as one file.
///
/// ```swift
/// let grocery = DocumentType(
///     identifier: "com.example.grocery-item",
///     conformsTo: [DocumentType.packageIdentifier, DocumentType.compositeContentIdentifier],
///     filenameExtensions: ["groceryitem"]
/// )
/// DocumentTypeRegistry.default.register(grocery)
/// ```
public struct DocumentType: Sendable, Hashable, CustomStringConvertible {
    /// `public.item`, the root of every type.
    public static let itemIdentifier = "public.item"
    /// `public.data`, any byte stream (flat files).
    public static let dataIdentifier = "public.data"
    /// `public.directory`.
    public static let directoryIdentifier = "public.directory"
    /// `com.apple.package`: a directory presented as one file.
    public static let packageIdentifier = "com.apple.package"
    /// `public.composite-content`: content made of several parts.
    public static let compositeContentIdentifier = "public.composite-content"

    /// The reverse-DNS identifier, such as `public.plain-text`.
    public var identifier: String
    /// Identifiers of the types this one directly conforms to.
    public var conformsTo: [String]
    /// Filename extensions, without the dot, preferred first.
    public var filenameExtensions: [String]
    /// A human description.
    public var localizedDescription: String?

    /// Creates a type declaration.
    public init(
        identifier: String,
        conformsTo: [String],
        filenameExtensions: [String] = [],
        localizedDescription: String? = nil
    ) {
        self.identifier = identifier
        self.conformsTo = conformsTo
        self.filenameExtensions = filenameExtensions.map { $0.lowercased() }
        self.localizedDescription = localizedDescription
    }

    /// The preferred filename extension, if the type declares one.
    public var preferredFilenameExtension: String? { filenameExtensions.first }

    /// The identifier.
    public var description: String { identifier }
}
