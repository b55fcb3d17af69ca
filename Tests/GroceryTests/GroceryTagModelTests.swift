import Foundation
import Grocery
import RecordStore
import Testing

@Suite("The Grocery tag model")
struct GroceryTagModelTests {
    /// Version 1 of the model, as the Grocery sample first shipped it: tags without a colour.
    static let firstModel = ManagedObjectModel(
        version: 1,
        entities: [
            GroceryTagModel.item,
            EntityDescription(
                name: "Tag", attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [
                    RelationshipDescription(
                        name: "items", destinationEntityName: "GroceryItem", inverseName: "tags", isToMany: true)
                ],
                uniquenessKey: ["name"]),
        ])

    @Test("the model is valid, and a tag's colour is an optional attribute added in version 2")
    func modelIsValid() throws {
        #expect(GroceryTagModel.model.problems.isEmpty)
        #expect(Self.firstModel.problems.isEmpty)
        #expect(GroceryTagModel.model.version == 2)
        let color = try #require(GroceryTagModel.tag.attributesByName["color"])
        #expect(color.isOptional && color.type == .string)
    }

    @Test("a store of version 1 opens with version 2: its tags and links kept, without a colour until one is set")
    func firstVersionStoreMigrates() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "grocery-model-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("Grocery.sqlite")
        let options: [String: any Sendable] = [NSMigratePersistentStoresAutomaticallyOption: true]

        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: Self.firstModel)
            try coordinator.addPersistentStore(type: .sqlite, configuration: nil, at: file, options: options)
            let context = Self.context(on: coordinator)
            let tag = ManagedObjectContext.insertNewObject(forEntityName: "Tag", into: context)
            tag.setValue("Dairy", forKey: "name")
            let item = ManagedObjectContext.insertNewObject(forEntityName: "GroceryItem", into: context)
            item.setValue("1F2E3D4C", forKey: "documentID")
            item.setValue([tag], forKey: "tags")
            try context.save()
        }

        let coordinator = PersistentStoreCoordinator(managedObjectModel: GroceryTagModel.model)
        try coordinator.addPersistentStore(type: .sqlite, configuration: nil, at: file, options: options)
        let context = Self.context(on: coordinator)
        let dairy = try #require(try context.fetch(FetchRequest<GroceryTag>()).first)
        #expect(dairy.name == "Dairy")
        #expect(dairy.color == nil)
        #expect(dairy.items.map(\.documentID) == ["1F2E3D4C"])
        dairy.color = "blue"
        try context.save()

        let reread = Self.context(on: coordinator)
        let colored = try #require(try reread.fetch(FetchRequest<GroceryTag>()).first)
        #expect(colored.color == "blue")
        #expect(colored.items.map(\.documentID) == ["1F2E3D4C"])
    }

    private static func context(on coordinator: PersistentStoreCoordinator) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return context
    }
}
