import Foundation
import RecordStore

/// Reads a log the way an import does, and finds the item it inserted in the store.
enum LogCheck {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The title of the one item `bytes` inserts, as the store holds it.
    static func insertedTitle(in bytes: [UInt8], context: ManagedObjectContext) throws -> String {
        let log = try TransactionLog(decoding: bytes)
        let inserted = log.changes.filter { $0.id.entityName == "Item" && $0.existence == true }
        guard inserted.count == 1 else { throw Failure(description: "\(inserted.count) items inserted") }
        let item = try context.existingObject(with: inserted[0].id)
        guard let title = item.value(forKey: "title") as? String else {
            throw Failure(description: "the item has no title")
        }
        return title
    }
}
