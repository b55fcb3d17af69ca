import DocumentKit
import Foundation
import Testing

@testable import RecordStore

/// A main-queue context with DocumentKit's undo manager records each change as an undoable step, as Core Data's
/// does: undo and redo walk inserts, attribute and relationship changes and deletes back and forth, before and
/// after a save.
@Suite("Record store undo")
@MainActor
struct UndoTests {
    @Test("insert, edit, link and delete undone step by step and redone; an undone change after a save saves back")
    func undoWalksChangesBackAndForth() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("record-store-undo-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            let fixture = try StoreFixture(in: folder)
            let context = ManagedObjectContext(concurrencyType: .mainQueue)
            context.persistentStoreCoordinator = fixture.coordinator
            let undo = UndoManager()
            undo.groupsByEvent = false
            context.undoManager = undo
            func step(_ body: () -> Void) {
                undo.beginUndoGrouping()
                body()
                undo.endUndoGrouping()
            }
            var milk: Item!
            var family: Tag!
            step {
                milk = Item(context: context)
                milk.title = "Milk"
                family = Tag(context: context)
                family.name = "Family"
            }
            step { milk.title = "Whole milk" }
            step { milk.tags = [family] }

            undo.undo()
            #expect(milk.tags.isEmpty && family.items.isEmpty, "the link undone on both sides")
            undo.undo()
            #expect(milk.title == "Milk")
            undo.undo()
            #expect(context.insertedObjects.isEmpty && !context.hasChanges, "the insert undone")
            undo.redo()
            undo.redo()
            undo.redo()
            #expect(context.insertedObjects.count == 2 && milk.title == "Whole milk")
            #expect(milk.tags.map(\.name) == ["Family"])

            try context.save()
            step { context.delete(milk) }
            #expect(context.deletedObjects.contains(milk))
            undo.undo()
            #expect(context.deletedObjects.isEmpty && milk.title == "Whole milk" && milk.tags.map(\.name) == ["Family"])
            step { milk.title = "Oat milk" }
            try context.save()
            undo.undo()
            #expect(milk.title == "Whole milk" && context.hasChanges)
            try context.save()
            let reader = fixture.context()
            try withExtendedLifetime(reader) {
                let saved = try #require(try reader.existingObject(with: milk.objectID) as? Item)
                #expect(saved.title == "Whole milk" && saved.tags.map(\.name) == ["Family"])
            }
        }
    }
}
