import Foundation
import Testing

@testable import RecordStore

/// A fetched results controller kept up to date by saves, merges of another context's saves, and imports.
@Suite("Record store fetched results controller")
struct FetchedResultsControllerTests {
    /// Records what a controller tells its delegate.
    final class Recorder: FetchedResultsControllerDelegate {
        typealias Result = Item
        var batches: [[String]] = []
        private var current: [String] = []

        func controllerWillChangeContent(_ controller: FetchedResultsController<Item>) { current = [] }

        func controller(
            _ controller: FetchedResultsController<Item>, didChange object: Item, at indexPath: IndexPath?,
            for type: FetchedResultsChangeType, newIndexPath: IndexPath?
        ) {
            let place = { (path: IndexPath?) in path.map { "\($0[0]).\($0[1])" } ?? "-" }
            current.append("\(type) \(object.title) \(place(indexPath))→\(place(newIndexPath))")
        }

        func controllerDidChangeContent(_ controller: FetchedResultsController<Item>) { batches.append(current) }
    }

    @Test(
        "sections by a key; inserts, updates, moves and deletes reported with their places as saves and merges happen")
    func keepsResultsUpToDate() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder)
            let context = fixture.context()
            for (title, quantity) in [("Milk", 1), ("Bread", 2)] {
                let item = Item(context: context)
                item.title = title
                item.quantity = Int16(quantity)
            }
            try context.save()

            let request = FetchRequest<Item>(sortDescriptors: [SortDescriptor(\.quantity), SortDescriptor(\.title)])
            let controller = FetchedResultsController(
                fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "quantity", cacheName: nil)
            let recorder = Recorder()
            controller.delegate = recorder
            try controller.performFetch()
            #expect(controller.sections?.map(\.name) == ["1", "2"])
            #expect(controller.object(at: [1, 0]).title == "Bread")

            let eggs = Item(context: context)
            eggs.title = "Eggs"
            try context.save()
            #expect(recorder.batches.last == ["insert Eggs -→0.0"])
            #expect(controller.sections?.map(\.numberOfObjects) == [2, 1])

            // Another context's save, merged as the book merges imports: an update in place and a move.
            let other = fixture.context()
            nonisolated(unsafe) var saved: Notification?
            let observer = NotificationCenter.default.addObserver(
                forName: ManagedObjectContext.didSaveObjectsNotification, object: other, queue: nil
            ) { note in saved = note }
            defer { NotificationCenter.default.removeObserver(observer) }
            let items = try other.all(Item.self, sortedBy: \.title)
            try withExtendedLifetime(other) {
                items.first { $0.title == "Bread" }?.title = "Brown bread"
                items.first { $0.title == "Eggs" }?.quantity = 3
                try other.save()
            }
            context.mergeChanges(fromContextDidSave: try #require(saved))
            #expect(recorder.batches.last == ["move Eggs 0.0→2.0", "update Brown bread 1.0→-"])
            #expect(controller.fetchedObjects?.map(\.title) == ["Milk", "Brown bread", "Eggs"])

            context.delete(eggs)
            try context.save()
            #expect(recorder.batches.last == ["delete Eggs 2.0→-"])
            #expect(controller.indexPath(forObject: eggs) == nil)
        }
    }
}
