import Foundation
import Testing

@testable import RecordStore

@Suite("Record store models and object ids")
struct ModelTests {
    @Test("the book's model is valid, and each pair of inverses is stored on one side only")
    func validModel() throws {
        let model = TestModel.model
        #expect(model.problems.isEmpty)
        try model.validate()
        #expect(model.storage(ofRelationship: "tags", in: "Item") == .links)
        #expect(model.storage(ofRelationship: "items", in: "Tag") == .inverse(of: "Item", relationship: "tags"))
        #expect(model.storage(ofRelationship: "list", in: "Item") == .register)
        #expect(model.storage(ofRelationship: "items", in: "List") == .inverse(of: "Item", relationship: "list"))
        #expect(throws: RecordStoreError.self) { try model.entity(named: "Ghost") }
    }

    @Test("a model that contradicts itself names what is wrong and is refused")
    func invalidModels() {
        let item = TestModel.item
        let cases: [(ManagedObjectModel, String)] = [
            (ManagedObjectModel(entities: [item, item]), "two entities"),
            (ManagedObjectModel(entities: [item]), "not in the model"),
            (ManagedObjectModel(version: 0, entities: []), "version"),
            (
                ManagedObjectModel(entities: [
                    EntityDescription(
                        name: "A", attributes: [AttributeDescription(name: "n", type: .integer16)],
                        uniquenessKey: ["missing"])
                ]), "uniqueness key"
            ),
            (
                ManagedObjectModel(entities: [
                    EntityDescription(
                        name: "A",
                        attributes: [AttributeDescription(name: "n", type: .integer16, defaultValue: .string("x"))])
                ]), "default"
            ),
            (
                ManagedObjectModel(entities: [
                    EntityDescription(name: "A", attributes: [AttributeDescription(name: "bad name", type: .string)])
                ]), "not a name"
            ),
            (
                ManagedObjectModel(entities: [
                    EntityDescription(
                        name: "A",
                        relationships: [
                            RelationshipDescription(name: "b", destinationEntityName: "B", inverseName: "a")
                        ]),
                    EntityDescription(name: "B"),
                ]), "does not point back"
            ),
        ]
        for (model, expected) in cases {
            #expect(model.problems.contains { $0.contains(expected) }, "\(model.problems) should say \(expected)")
            #expect(throws: RecordStoreError.self) { try model.validate() }
        }
    }

    @Test("an id's URI reads back as the id; other URLs are not ids")
    func uriRepresentation() {
        let id = ManagedObjectID(entityName: "Item", uuid: UUID())
        #expect(ManagedObjectID(uriRepresentation: id.uriRepresentation()) == id)
        let temporary = ManagedObjectID(entityName: "Tag", uuid: UUID(), isTemporaryID: true)
        #expect(ManagedObjectID(uriRepresentation: temporary.uriRepresentation()) == temporary)
        for text in [
            "https://Item/\(id.uuid.uuidString)", "x-ubiquity-record://Item/not-a-uuid",
            "x-ubiquity-record:///\(id.uuid.uuidString)", "x-ubiquity-record://Item/\(id.uuid.uuidString)/t/x",
        ] {
            #expect(ManagedObjectID(uriRepresentation: URL(string: text)!) == nil, "\(text)")
        }
    }

    @Test("the id of a uniqueness key's values is the same on every device, and differs with the values")
    func derivedIDs() {
        let family = ManagedObjectID.derived(entityName: "Tag", keyValues: [.string("Family")])
        #expect(family == ManagedObjectID.derived(entityName: "Tag", keyValues: [.string("Family")]))
        #expect(family != ManagedObjectID.derived(entityName: "Tag", keyValues: [.string("family")]))
        #expect(family != ManagedObjectID.derived(entityName: "List", keyValues: [.string("Family")]))
        #expect(
            family.uuid.uuidString == "\(family.uuid.uuidString.prefix(14))8\(family.uuid.uuidString.dropFirst(15))")
    }

    @Test("new objects' ids are random version-4 UUIDs, as Foundation makes them")
    func newIDsAreVersionFour() {
        let ids = (0..<2_000).map { _ in ManagedObjectContext.newObjectID(for: TestModel.item).uuid.uuidString }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            let characters = Array(id)
            #expect(characters[14] == "4", "\(id): the version")
            #expect("89AB".contains(characters[19]), "\(id): the variant")
        }
        // Every other bit varies: each hex digit outside the version takes more than one value across the ids.
        for position in Array(ids[0]).indices where ![8, 13, 14, 18, 23].contains(position) {
            #expect(Set(ids.map { Array($0)[position] }).count > 1, "position \(position)")
        }
    }
}
