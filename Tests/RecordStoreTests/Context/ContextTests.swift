import Foundation
import Testing

@testable import RecordStore

/// Contexts on a real SQLite store: what an app saves is what another context reads, relationships stay in step
/// on both sides, and bad changes are refused whole.
@Suite("Record store contexts")
struct ContextTests {
    @Test(
        "objects saved in one context are fetched in another, with predicates, sorting, limits and both sides of relationships"
    )
    func saveAndFetch() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder)
            let writer = fixture.context()
            let week = GroceryList(context: writer)
            week.name = "Week"
            let family = Tag(context: writer)
            family.name = "Family"
            for (title, quantity) in [("Milk", 2), ("Bread", 1), ("Eggs", 12), ("Tea", 1)] {
                let item = Item(context: writer)
                item.title = title
                item.quantity = Int16(quantity)
                item.list = week
                if title != "Tea" { item.tags.insert(family) }
            }
            #expect(week.items.count == 4, "the inverse follows at once, before any save")
            #expect(family.items.count == 3)
            #expect(writer.hasChanges && writer.insertedObjects.count == 6)
            try writer.save()
            #expect(!writer.hasChanges)
            #expect(!family.objectID.isTemporaryID, "a saved tag takes the id its name gives it")
            #expect(family.objectID == ManagedObjectID.derived(entityName: "Tag", keyValues: [.string("Family")]))

            let reader = fixture.context()
            let items = try reader.all(Item.self, sortedBy: \.title)
            #expect(items.map(\.title) == ["Bread", "Eggs", "Milk", "Tea"])
            #expect(items.map(\.quantity) == [1, 12, 2, 1])
            #expect(items.allSatisfy { $0.list?.name == "Week" })
            #expect(items.map { $0.tags.map(\.name) } == [["Family"], ["Family"], ["Family"], []])
            var request = FetchRequest<Item>(
                predicate: #Predicate<Item> { $0.quantity == 1 },
                sortDescriptors: [SortDescriptor(\.title, order: .reverse)])
            #expect(try reader.fetch(request).map(\.title) == ["Tea", "Bread"])
            request.predicate = nil
            request.fetchOffset = 1
            request.fetchLimit = 2
            #expect(try reader.fetch(request).map(\.title) == ["Milk", "Eggs"])
            #expect(try reader.count(for: FetchRequest<Item>()) == 4)
            #expect(try reader.count(for: FetchRequest<Item>(predicate: #Predicate { $0.title.contains("e") })) == 2)
            let tag = try #require(try reader.all(Tag.self, sortedBy: \.name).first)
            #expect(Set(tag.items.map(\.title)) == ["Milk", "Bread", "Eggs"])
            #expect(tag.value(forKey: "name") as? String == "Family")
            #expect((tag.value(forKey: "items") as? Set<ManagedObject>)?.count == 3)

            // Pending changes count in a fetch: an unsaved insert is found, an unsaved delete is not.
            let coffee = Item(context: reader)
            coffee.title = "Coffee"
            reader.delete(items[0])
            #expect(try reader.all(Item.self, sortedBy: \.title).map(\.title) == ["Coffee", "Eggs", "Milk", "Tea"])
        }
    }

    @Test("a fetch of thousands of objects gives each its own values, filtered by SQLite or in memory alike")
    func largeFetchKeepsEachObjectsValues() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder)
            let writer = fixture.context()
            let week = GroceryList(context: writer)
            week.name = "Week"
            // More rows than one of the fetch's segments holds, the last segment partly filled.
            let count = 3_001
            for index in 0..<count {
                let item = Item(context: writer)
                item.title = "Item \(index)"
                item.quantity = Int16(index % 100)
                item.note = index % 3 == 0 ? "note \(index)" : nil
                if index % 7 == 0 { item.list = week }
            }
            try writer.save()

            func check(_ items: [Item]) {
                for item in items {
                    let index = Int(item.title.dropFirst("Item ".count))!
                    #expect(Int(item.quantity) == index % 100, "\(item.title)")
                    #expect(item.note == (index % 3 == 0 ? "note \(index)" : nil), "\(item.title)")
                    #expect((item.list?.name == "Week") == (index % 7 == 0), "\(item.title)")
                }
            }
            // SQLite answers the first predicate; the second (`contains`) is judged in memory on every object.
            do {
                let context = fixture.context()
                let matched = try context.fetch(FetchRequest<Item>(predicate: #Predicate { $0.quantity > 10 }))
                #expect(matched.count == (0..<count).count { $0 % 100 > 10 })
                check(matched)
                let judged = try context.fetch(FetchRequest<Item>(predicate: #Predicate { $0.title.contains("9") }))
                #expect(judged.count == (0..<count).count { "Item \($0)".contains("9") })
                check(judged)
                #expect(Set(matched.map(\.title)).count == matched.count, "each row makes its own object")
                // The first fetch registered its objects without looking them up: later ones find them.
                let firstFetched = Dictionary(uniqueKeysWithValues: matched.map { ($0.objectID, $0) })
                let again = judged.filter { firstFetched[$0.objectID] != nil }
                #expect(!again.isEmpty && again.allSatisfy { firstFetched[$0.objectID] === $0 }, "one object an id")
                #expect(context.object(with: matched[5].objectID) === matched[5])
            }
            #expect(try fixture.context().count(for: FetchRequest<Item>()) == count)
        }
    }

    @Test("an object a save inserted reads what was set over its defaults; setting a value it holds changes nothing")
    func savedInsertKeepsItsValues() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder)
            let context = fixture.context()
            let eggs = Item(context: context)
            eggs.note = "free range"
            let bread = Item(context: context)
            bread.title = "Bread"
            bread.quantity = 3
            try context.save()
            #expect(eggs.title == "" && eggs.quantity == 1 && eggs.note == "free range")
            #expect(bread.title == "Bread" && bread.quantity == 3 && bread.note == nil)
            bread.quantity = 3
            eggs.title = ""
            #expect(!context.hasChanges, "values equal to the saved ones are no changes")
            bread.quantity = 4
            #expect(bread.hasChanges && bread.changedValuesForCurrentEvent() == ["quantity": .integer(4)])
            context.rollback()
            #expect(bread.quantity == 3)
            let reader = fixture.context()
            let stored = try reader.all(Item.self, sortedBy: \.title)
            #expect(stored.map(\.title) == ["", "Bread"] && stored.map(\.quantity) == [1, 3])
            #expect(stored.map(\.note) == ["free range", nil])
        }
    }

    @Test("an object outlives its context: it then has none, reads as empty and changes nothing")
    func objectOutlivesItsContext() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder)
            var context: ManagedObjectContext? = fixture.context()
            let milk = Item(context: context!)
            milk.title = "Milk"
            try context!.save()
            let fetched = try #require(try fixture.context().all(Item.self, sortedBy: \.title).first)
            #expect(fetched.managedObjectContext == nil, "the context the fetch made is gone with its statement")
            #expect(milk.managedObjectContext === context)
            weak let released = context
            context = nil
            #expect(released == nil)
            for item in [milk, fetched] {
                #expect(item.managedObjectContext == nil)
                #expect(item.title == "" && item.value(forKey: "title") == nil)
                item.title = "Tea"
                #expect(item.title == "" && !item.hasChanges)
            }
        }
    }

    @Test("moving and removing relationships keeps both sides in step, saved and read again")
    func relationshipsStayInStep() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder)
            let context = fixture.context()
            let home = GroceryList(context: context)
            home.name = "Home"
            let office = GroceryList(context: context)
            office.name = "Office"
            let milk = Item(context: context)
            milk.title = "Milk"
            milk.list = home
            try context.save()

            office.items.insert(milk)
            #expect(milk.list === office, "adding to a list moves the item's to-one")
            #expect(home.items.isEmpty, "and takes it out of the list it was in")
            let work = Tag(context: context)
            work.name = "Work"
            milk.setValue([work], forKey: "tags")
            try context.save()

            let other = fixture.context()
            let read = try #require(try other.all(Item.self, sortedBy: \.title).first)
            #expect(read.list?.name == "Office")
            #expect(read.tags.map(\.name) == ["Work"])
            let lists = try other.all(GroceryList.self, sortedBy: \.name)
            #expect(lists.map { $0.items.count } == [0, 1])

            read.tags = []
            read.list = nil
            try other.save()
            let third = fixture.context()
            try withExtendedLifetime(third) { () throws in
                #expect(try third.all(Tag.self, sortedBy: \.name).map(\.items) == [[]])
                #expect(try third.all(GroceryList.self, sortedBy: \.name).map(\.items) == [[], []])
            }
        }
    }

    @Test("delete rules: a list's items go with it, a tag's links are nullified, a deny rule refuses the delete")
    func deleteRules() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder)
            let context = fixture.context()
            let list = GroceryList(context: context)
            list.name = "Party"
            let tag = Tag(context: context)
            tag.name = "Fun"
            for title in ["Cake", "Candles"] {
                let item = Item(context: context)
                item.title = title
                item.list = list
                item.tags = [tag]
            }
            let loose = Item(context: context)
            loose.title = "Napkins"
            loose.tags = [tag]
            try context.save()

            context.delete(list)
            #expect(context.deletedObjects.count == 3, "the cascade deletes the list's items at once")
            try context.save()
            let after = fixture.context()
            #expect(try after.all(Item.self, sortedBy: \.title).map(\.title) == ["Napkins"])
            let fun = try #require(try after.all(Tag.self, sortedBy: \.name).first)
            #expect(fun.items.map(\.title) == ["Napkins"])
            after.delete(fun)
            try after.save()
            let last = fixture.context()
            let napkins = try #require(try last.all(Item.self, sortedBy: \.title).first)
            #expect(napkins.title == "Napkins" && napkins.tags.isEmpty)

            let owner = EntityDescription(
                name: "Owner", attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [
                    RelationshipDescription(
                        name: "pets", destinationEntityName: "Pet", inverseName: "owner", isToMany: true,
                        deleteRule: .deny)
                ])
            let pet = EntityDescription(
                name: "Pet", attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [
                    RelationshipDescription(name: "owner", destinationEntityName: "Owner", inverseName: "pets")
                ])
            let denying = try StoreFixture(in: folder, name: "deny", model: ManagedObjectModel(entities: [owner, pet]))
            let pets = denying.context()
            let alice = ManagedObjectContext.insertNewObject(forEntityName: "Owner", into: pets)
            alice.setValue("Alice", forKey: "name")
            let rex = ManagedObjectContext.insertNewObject(forEntityName: "Pet", into: pets)
            rex.setValue("Rex", forKey: "name")
            rex.setValue(alice, forKey: "owner")
            try pets.save()
            pets.delete(alice)
            let error = #expect(throws: RecordStoreError.self) { try pets.save() }
            #expect(error?.code == .deleteDenied && error?.objectID == alice.objectID && error?.property == "pets")
            pets.rollback()
            #expect(!alice.isDeleted && !pets.hasChanges)
            pets.delete(rex)
            pets.delete(alice)
            try pets.save()
            #expect(try denying.context().count(for: FetchRequest<ManagedObject>(entityName: "Owner")) == 0)
        }
    }

    @Test(
        "a bad value or a missing required one is refused at save with the object and property named; nothing is saved")
    func validation() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder)
            let context = fixture.context()
            let tag = Tag(context: context)
            let unnamed = #expect(throws: RecordStoreError.self) { try context.save() }
            #expect(unnamed?.code == .validationFailed && unnamed?.property == "name")
            #expect(unnamed?.objectID == tag.objectID)
            tag.name = "Family"

            let item = Item(context: context)
            item.setValue("a dozen", forKey: "quantity")
            let mismatch = #expect(throws: RecordStoreError.self) { try context.save() }
            #expect(mismatch?.code == .typeMismatch && mismatch?.property == "quantity")
            #expect(item.quantity == 1, "the refused value changed nothing")
            context.rollback()

            // A refused value on an object read from the store, not changed otherwise, is thrown too.
            let saved = Item(context: context)
            saved.title = "Saved"
            try context.save()
            saved.setValue("many", forKey: "quantity")
            #expect(context.hasChanges)
            #expect(throws: RecordStoreError.self) { try context.save() }
            context.rollback()
            #expect(!context.hasChanges)
            context.delete(saved)
            try context.save()

            let again = Item(context: context)
            again.setValue(70_000, forKey: "quantity")
            #expect(throws: RecordStoreError.self) { try context.save() }
            context.rollback()
            let typo = Item(context: context)
            typo.setValue("x", forKey: "titel")
            let unknown = #expect(throws: RecordStoreError.self) { try context.save() }
            #expect(unknown?.code == .unknownProperty && unknown?.property == "titel")
            context.rollback()
            #expect(try fixture.context().count(for: FetchRequest<Item>()) == 0)
            #expect(try fixture.context().count(for: FetchRequest<Tag>()) == 0)
        }
    }

    @Test("rollback, reset and refresh")
    func rollbackResetRefresh() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder)
            let context = fixture.context()
            let item = Item(context: context)
            item.title = "Milk"
            try context.save()
            item.title = "Oat milk"
            #expect(context.updatedObjects == [item] && item.isUpdated)
            context.rollback()
            #expect(item.title == "Milk" && !context.hasChanges)

            let other = fixture.context()
            let same = try #require(try other.existingObject(with: item.objectID) as? Item)
            same.quantity = 3
            try other.save()
            #expect(item.quantity == 1, "a context keeps what it read until told")
            context.refresh(item, mergeChanges: false)
            #expect(item.quantity == 3)
            context.reset()
            #expect(context.registeredObjects.isEmpty)
            #expect(throws: RecordStoreError.self) {
                try context.existingObject(with: ManagedObjectID(entityName: "Item", uuid: UUID()))
            }
        }
    }

    @Test("a key deleted and created again in one save, an unsaved list deleted with its items, a delete meanwhile")
    func editsThatMeet() throws {
        try withTemporaryFolder { folder in
            let fixture = try StoreFixture(in: folder)
            let context = fixture.context()
            let family = Tag(context: context)
            family.name = "Family"
            let milk = Item(context: context)
            milk.title = "Milk"
            milk.tags = [family]
            try context.save()

            // The tag deleted and a new one of the same name made, in one save: the new one stands, with its links.
            context.delete(family)
            let again = Tag(context: context)
            again.name = "Family"
            milk.tags = [again]
            try context.save()
            let reader = fixture.context()
            try withExtendedLifetime(reader) { () throws in
                let tags = try reader.all(Tag.self, sortedBy: \.name)
                #expect(tags.map(\.name) == ["Family"])
                #expect(tags.first?.items.map(\.title) == ["Milk"])
            }

            // An unsaved list deleted before its first save takes its unsaved items with it.
            let party = GroceryList(context: context)
            party.name = "Party"
            let cake = Item(context: context)
            cake.title = "Cake"
            cake.list = party
            context.delete(party)
            #expect(context.insertedObjects.isEmpty && !context.hasChanges)

            // An object another context deleted meanwhile: the edit is saved, and the delete still wins.
            let other = fixture.context()
            let theirs = try other.existingObject(with: milk.objectID)
            other.delete(theirs)
            try other.save()
            milk.quantity = 4
            try context.save()
            #expect(context.registeredObjects.contains(milk) == false)
            #expect(throws: RecordStoreError.self) { try context.existingObject(with: milk.objectID) }

            // A saved tag's name is its identity on every device: renaming it is refused.
            let renamed = try #require(try reader.all(Tag.self, sortedBy: \.name).first)
            renamed.name = "Home"
            let rename = #expect(throws: RecordStoreError.self) { try reader.save() }
            #expect(rename?.code == .validationFailed && rename?.property == "name")
            reader.rollback()

            // An object of another context is refused as a relationship's target.
            let elsewhere = Tag(context: other)
            elsewhere.name = "Elsewhere"
            let bread = Item(context: context)
            bread.title = "Bread"
            bread.tags = [elsewhere]
            let error = #expect(throws: RecordStoreError.self) { try context.save() }
            #expect(error?.property == "tags")
        }
    }
}
