import DocumentKit
import Foundation

/// The grocery item's document type and file names.
public enum GroceryItemType {
    /// The type's identifier.
    public static let identifier = "com.example.grocery.item"
    /// The package extension (the seeds' `.gro`).
    public static let filenameExtension = "gro"
    /// The prefix every item's file name starts with, which the app's query looks for.
    public static let prefix = "Item_"

    /// Registers the type with the default registry, as an app declares its document types at launch: the engine
    /// then syncs `Item_<uuid>.gro` folders as one item each. Safe to call more than once.
    public static func register() {
        let registry = DocumentTypeRegistry.default
        guard !registry.isPackageExtension(filenameExtension) else { return }
        registry.register(
            DocumentType(
                identifier: identifier, conformsTo: [DocumentType.packageIdentifier],
                filenameExtensions: [filenameExtension]))
    }

    /// A new item's file name: `Item_<uuid>.gro` (a UUID, so two devices never pick the same one).
    public static func newFileName() -> String { "\(prefix)\(UUID().uuidString).\(filenameExtension)" }

    /// Whether `fileName` is an item's.
    public static func isItem(_ fileName: String) -> Bool {
        fileName.hasPrefix(prefix) && (fileName as NSString).pathExtension == filenameExtension
    }

    /// The item's id as shown to people: the UUID part of its file name.
    public static func id(ofFile fileName: String) -> String {
        String((fileName as NSString).deletingPathExtension.dropFirst(prefix.count))
    }
}
