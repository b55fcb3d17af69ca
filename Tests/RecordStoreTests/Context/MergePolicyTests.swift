import Foundation
import Testing

@testable import RecordStore

/// Two contexts on one store: one saves while the other holds unsaved changes of the same objects; the second
/// save is settled by its merge policy, as Core Data's are.
@Suite("Record store merge policies")
struct MergePolicyTests {
    /// Milk saved with quantity 1; `mine` reads it, `theirs` saves title "Whole milk" and quantity `theirQuantity`;
    /// then `mine` sets quantity 5 (and a note), and saves with `policy`.
    private func conflict(
        in folder: URL, policy: MergePolicy, theirQuantity: Int16 = 2
    ) throws -> (fixture: StoreFixture, mine: ManagedObjectContext, item: Item, error: RecordStoreError?) {
        let fixture = try StoreFixture(in: folder)
        let setup = fixture.context()
        let milk = Item(context: setup)
        milk.title = "Milk"
        try setup.save()

        let mine = fixture.context(policy)
        let item = try #require(try mine.existingObject(with: milk.objectID) as? Item)
        #expect(item.quantity == 1)
        let theirs = fixture.context()
        let their = try #require(try theirs.existingObject(with: milk.objectID) as? Item)
        their.title = "Whole milk"
        their.quantity = theirQuantity
        try theirs.save()

        item.quantity = 5
        item.note = "organic"
        do {
            try mine.save()
            return (fixture, mine, item, nil)
        } catch {
            return (fixture, mine, item, error)
        }
    }

    /// The item as the store holds it: title, quantity and note.
    private func stored(_ fixture: StoreFixture, _ item: Item) throws -> (String, Int16, String?) {
        let context = fixture.context()
        return try withExtendedLifetime(context) {
            let saved = try #require(try context.existingObject(with: item.objectID) as? Item)
            return (saved.title, saved.quantity, saved.note)
        }
    }

    @Test("the error policy throws each conflict with the values in memory, read and stored; nothing is saved")
    func errorPolicy() throws {
        try withTemporaryFolder { folder in
            let (fixture, mine, item, error) = try conflict(in: folder, policy: .error)
            #expect(error?.code == .mergeConflict)
            #expect(
                error?.conflicts == [
                    MergeConflict(
                        objectID: item.objectID, property: "quantity", objectValue: .integer(5),
                        cachedValue: .integer(1), persistedValue: .integer(2))
                ])
            #expect(mine.hasChanges, "the context keeps its changes")
            let saved = try stored(fixture, item)
            #expect(saved.1 == 2 && saved.2 == nil)
        }
    }

    @Test("by property: the store's or the context's value wins where both changed; the rest of both is kept")
    func byProperty() throws {
        try withTemporaryFolder { folder in
            let (fixture, mine, item, error) = try conflict(in: folder, policy: .mergeByPropertyStoreTrump)
            defer { withExtendedLifetime(mine) {} }
            #expect(error == nil)
            let saved = try stored(fixture, item)
            #expect(saved == ("Whole milk", 2, "organic"))
            #expect(item.quantity == 2, "the context reads the value that won")
        }
        try withTemporaryFolder { folder in
            let (fixture, _, item, error) = try conflict(in: folder, policy: .mergeByPropertyObjectTrump)
            #expect(error == nil)
            let saved = try stored(fixture, item)
            #expect(saved == ("Whole milk", 5, "organic"))
        }
    }

    @Test("overwrite saves the whole object as the context holds it; rollback drops the context's changes")
    func overwriteAndRollback() throws {
        try withTemporaryFolder { folder in
            let (fixture, _, item, error) = try conflict(in: folder, policy: .overwrite)
            #expect(error == nil)
            let saved = try stored(fixture, item)
            #expect(saved == ("Milk", 5, "organic"))
        }
        try withTemporaryFolder { folder in
            let (fixture, mine, item, error) = try conflict(in: folder, policy: .rollback)
            #expect(error == nil)
            let saved = try stored(fixture, item)
            #expect(saved == ("Whole milk", 2, nil))
            #expect(!mine.hasChanges && item.note == nil)
        }
    }

    @Test("a custom policy decides each conflict; changes of different properties never conflict")
    func customPolicy() throws {
        try withTemporaryFolder { folder in
            let doubled = MergePolicy { conflicts in
                Dictionary(
                    uniqueKeysWithValues: conflicts.map { conflict in
                        guard case .integer(let mine) = conflict.objectValue,
                            case .integer(let theirs) = conflict.persistedValue
                        else { return (conflict, MergePolicy.Resolution.keepStoredValue) }
                        return (conflict, .set(.integer(mine + theirs)))
                    })
            }
            let (fixture, _, item, error) = try conflict(in: folder, policy: doubled)
            #expect(error == nil)
            #expect(try stored(fixture, item).1 == 7)
        }
        // A value the property cannot hold (text for a number, a number past Int16) is refused, naming the
        // property, and nothing of the save is kept.
        for wrong in [RecordValue.string("many"), .integer(70_000)] {
            try withTemporaryFolder { folder in
                let policy = MergePolicy { conflicts in
                    Dictionary(uniqueKeysWithValues: conflicts.map { ($0, MergePolicy.Resolution.set(wrong)) })
                }
                let (fixture, mine, item, error) = try conflict(in: folder, policy: policy)
                #expect(error?.code == .typeMismatch && error?.property == "quantity", "\(wrong)")
                #expect(mine.hasChanges)
                #expect(try stored(fixture, item) == ("Whole milk", 2, nil))
            }
        }
        try withTemporaryFolder { folder in
            // Theirs leaves the quantity as it was: only the title changed there, so nothing conflicts.
            let (fixture, _, item, error) = try conflict(in: folder, policy: .error, theirQuantity: 1)
            #expect(error == nil)
            let saved = try stored(fixture, item)
            #expect(saved == ("Whole milk", 5, "organic"))
        }
    }

    @Test("a second tag of the same name is refused under the error policy and merged into one under the others")
    func uniquenessKey() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder)
            let first = fixture.context()
            let family = Tag(context: first)
            family.name = "Family"
            let milk = Item(context: first)
            milk.title = "Milk"
            milk.tags = [family]
            try first.save()

            let second = fixture.context()
            let again = Tag(context: second)
            again.name = "Family"
            let bread = Item(context: second)
            bread.title = "Bread"
            bread.tags = [again]
            let error = #expect(throws: RecordStoreError.self) { try second.save() }
            #expect(error?.code == .uniquenessConflict && error?.objectID == family.objectID)

            second.mergePolicy = .mergeByPropertyObjectTrump
            try second.save()
            let reader = fixture.context()
            let tags = try reader.all(Tag.self, sortedBy: \.name)
            #expect(tags.count == 1)
            #expect(Set(tags[0].items.map(\.title)) == ["Milk", "Bread"])
        }
    }

    @Test("a did-save notification merged into another context brings the saved values, keeping its own changes")
    func mergeChangesFromDidSave() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder)
            let main = fixture.context()
            let milk = Item(context: main)
            milk.title = "Milk"
            try main.save()
            let worker = fixture.context()
            let their = try #require(try worker.existingObject(with: milk.objectID) as? Item)
            // The observer runs in `post`, on this thread, before `save` returns.
            nonisolated(unsafe) var saved: Notification?
            let observer = NotificationCenter.default.addObserver(
                forName: ManagedObjectContext.didSaveObjectsNotification, object: worker, queue: nil
            ) { note in saved = note }
            defer { NotificationCenter.default.removeObserver(observer) }
            their.title = "Whole milk"
            try worker.save()
            let note = try #require(saved)
            #expect((note.userInfo?[NSUpdatedObjectsKey] as? Set<ManagedObjectID>) == [milk.objectID])

            milk.note = "organic"
            #expect(milk.title == "Milk")
            main.mergeChanges(fromContextDidSave: note)
            #expect(milk.title == "Whole milk" && milk.note == "organic")
            try main.save()
        }
    }
}
