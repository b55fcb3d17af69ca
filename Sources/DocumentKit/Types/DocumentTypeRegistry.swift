import Foundation
import Synchronization

/// The set of declared document types, looked up by identifier or filename extension — what the system's UTI database
/// is on Apple's platforms.
///
/// ``default`` starts with the common public types (`public.data`, `public.plain-text`, `public.json`, `public.png`,
/// `public.jpeg`, `public.folder`, `com.apple.package`, …); an app registers its own document types at launch, as it
/// declares them in its Info.plist on iOS. An extension nobody declared gets a dynamic type, `dyn.<extension>`,
/// conforming to `public.data`.
public final class DocumentTypeRegistry: Sendable {
    /// The process-wide registry, as the system's type database is on Apple's platforms.
    public static let `default` = DocumentTypeRegistry(types: DocumentTypeRegistry.builtInTypes)

    private struct State {
        var byIdentifier: [String: DocumentType] = [:]
        var byExtension: [String: String] = [:]
    }
    private let state: Mutex<State>

    /// Creates a registry holding `types` (and nothing else).
    public init(types: [DocumentType] = DocumentTypeRegistry.builtInTypes) {
        var initial = State()
        for type in types { Self.insert(type, into: &initial) }
        state = Mutex(initial)
    }

    /// Declares `type`, replacing a declaration with the same identifier. Its extensions now map to it.
    public func register(_ type: DocumentType) {
        state.withLock { Self.insert(type, into: &$0) }
    }

    /// The type with `identifier`, if declared (or dynamic, for `dyn.` identifiers).
    public func type(withIdentifier identifier: String) -> DocumentType? {
        if let type = state.withLock({ $0.byIdentifier[identifier] }) { return type }
        if identifier.hasPrefix("dyn.") {
            return Self.dynamicType(forExtension: String(identifier.dropFirst(4)))
        }
        return nil
    }

    /// The type for a filename extension (case-insensitive): a declared one, or a dynamic `dyn.` type.
    public func type(forFilenameExtension filenameExtension: String) -> DocumentType {
        let key = filenameExtension.lowercased()
        let found = state.withLock { state in state.byExtension[key].flatMap { state.byIdentifier[$0] } }
        return found ?? Self.dynamicType(forExtension: key)
    }

    /// The type of the item at `url`, from its extension; a directory with an undeclared extension is
    /// `public.folder`.
    public func type(forFileAt url: URL, isDirectory: Bool) -> DocumentType {
        let ext = url.pathExtension
        if ext.isEmpty {
            return type(withIdentifier: isDirectory ? "public.folder" : Self.dataTypeIdentifier)!
        }
        let found = type(forFilenameExtension: ext)
        if isDirectory && found.identifier.hasPrefix("dyn.") { return type(withIdentifier: "public.folder")! }
        return found
    }

    /// Whether the type `identifier` is, or transitively conforms to, `other`.
    public func conforms(_ identifier: String, to other: String) -> Bool {
        if identifier == other { return true }
        var seen: Set<String> = [identifier]
        var pending = [identifier]
        while let next = pending.popLast() {
            for parent in type(withIdentifier: next)?.conformsTo ?? [] where seen.insert(parent).inserted {
                if parent == other { return true }
                pending.append(parent)
            }
        }
        return false
    }

    /// Whether items of type `identifier` are packages (conform to `com.apple.package`).
    public func isPackage(_ identifier: String) -> Bool {
        conforms(identifier, to: DocumentType.packageIdentifier)
    }

    /// Whether a directory named with `filenameExtension` is a package.
    public func isPackageExtension(_ filenameExtension: String) -> Bool {
        !filenameExtension.isEmpty && isPackage(type(forFilenameExtension: filenameExtension).identifier)
    }

    /// The outermost package directory that contains `url` or is `url`, judged by the extensions of its path
    /// components; `nil` when no component is a package.
    public func packageRoot(containing url: URL) -> URL? {
        packageRoot(containingPath: url.standardizedFileURL.path).map { URL(fileURLWithPath: $0, isDirectory: true) }
    }

    /// ``packageRoot(containing:)`` for an absolute, standardized path: a plain string walk, cheap enough for
    /// every coordinated access. A name's extension follows its last dot, and a name starting with a dot and
    /// having no other has none (as `NSString.pathExtension` reads names).
    public func packageRoot(containingPath path: String) -> String? {
        var end = path.startIndex
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            end = component.endIndex
            guard let dot = component.lastIndex(of: "."), dot != component.startIndex else { continue }
            let ext = component[component.index(after: dot)...]
            if !ext.isEmpty && isPackageExtension(String(ext)) { return String(path[..<end]) }
        }
        return nil
    }

    private static let dataTypeIdentifier = DocumentType.dataIdentifier

    private static func dynamicType(forExtension ext: String) -> DocumentType {
        DocumentType(identifier: "dyn.\(ext)", conformsTo: [DocumentType.dataIdentifier], filenameExtensions: [ext])
    }

    private static func insert(_ type: DocumentType, into state: inout State) {
        state.byIdentifier[type.identifier] = type
        for ext in type.filenameExtensions { state.byExtension[ext] = type.identifier }
    }

    /// The common public types every registry starts with.
    public static let builtInTypes: [DocumentType] = [
        DocumentType(identifier: DocumentType.itemIdentifier, conformsTo: []),
        DocumentType(identifier: "public.content", conformsTo: []),
        DocumentType(identifier: DocumentType.compositeContentIdentifier, conformsTo: ["public.content"]),
        DocumentType(identifier: DocumentType.dataIdentifier, conformsTo: [DocumentType.itemIdentifier]),
        DocumentType(identifier: DocumentType.directoryIdentifier, conformsTo: [DocumentType.itemIdentifier]),
        DocumentType(identifier: "public.folder", conformsTo: [DocumentType.directoryIdentifier]),
        DocumentType(identifier: DocumentType.packageIdentifier, conformsTo: [DocumentType.directoryIdentifier]),
        DocumentType(identifier: "public.text", conformsTo: [DocumentType.dataIdentifier, "public.content"]),
        DocumentType(
            identifier: "public.plain-text", conformsTo: ["public.text"], filenameExtensions: ["txt", "text"]),
        DocumentType(identifier: "public.utf8-plain-text", conformsTo: ["public.plain-text"]),
        DocumentType(
            identifier: "net.daringfireball.markdown", conformsTo: ["public.plain-text"],
            filenameExtensions: ["md", "markdown"]),
        DocumentType(identifier: "public.json", conformsTo: ["public.text"], filenameExtensions: ["json"]),
        DocumentType(identifier: "public.xml", conformsTo: ["public.text"], filenameExtensions: ["xml"]),
        DocumentType(
            identifier: "com.apple.property-list", conformsTo: [DocumentType.dataIdentifier],
            filenameExtensions: ["plist"]),
        DocumentType(identifier: "public.image", conformsTo: [DocumentType.dataIdentifier, "public.content"]),
        DocumentType(identifier: "public.png", conformsTo: ["public.image"], filenameExtensions: ["png"]),
        DocumentType(identifier: "public.jpeg", conformsTo: ["public.image"], filenameExtensions: ["jpeg", "jpg"]),
        DocumentType(
            identifier: "com.adobe.pdf", conformsTo: [DocumentType.dataIdentifier, "public.content"],
            filenameExtensions: ["pdf"]),
    ]
}
