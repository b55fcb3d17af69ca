import DocumentKit
import Foundation

/// A grocery item as the seeds' app keeps it, reduced to its name: a flat text document.
@MainActor
final class GroceryItemDocument: Document {
    var name = ""

    override func contents(forType typeName: String) throws -> Any { Data(name.utf8) }

    override func load(fromContents contents: Any, ofType typeName: String?) throws {
        guard let data = contents as? Data else { throw DocumentError(.readFailed, "expected a flat file") }
        name = String(decoding: data, as: UTF8.self)
    }

    /// Renames the item, as the app's editing code does.
    func rename(_ newName: String) {
        name = newName
        updateChangeCount(.done)
    }
}
