import Foundation
import Testing
import UbiquityTestSupport

@testable import RecordStore

/// Counters with integer and Boolean attributes, and properties that read one attribute without being it.
final class Counter: ManagedObject {
    @Attribute("count") var count: Int64
    @Attribute("level") var level: Int32
    @Attribute("done") var done: Bool
    @Attribute("rank") var rank: Int16
    @Attribute("label") var label: String

    /// Computed over `count`: not the attribute, though it reads only it.
    var doubled: Int64 { count * 2 }
    /// Clamped `count`: the same as the attribute for most values.
    var capped: Int64 { min(count, 1_000) }
}

@Suite("Fetches answered in SQL")
struct PredicateSQLTests {
    static let entity = EntityDescription(
        name: "Counter", managedObjectClass: Counter.self,
        attributes: [
            AttributeDescription(name: "count", type: .integer64, defaultValue: .integer(0)),
            AttributeDescription(name: "level", type: .integer32),
            AttributeDescription(name: "done", type: .boolean, defaultValue: .boolean(false)),
            AttributeDescription(name: "rank", type: .integer16, defaultValue: .integer(5)),
            AttributeDescription(name: "label", type: .string, defaultValue: .string("")),
        ])
    static let model = ManagedObjectModel(version: 1, entities: [entity])

    @Test("only comparisons of integer and Boolean attributes with constants are translated, and exactly")
    func translation() throws {
        let translated = try #require(
            PredicateSQL(
                #Predicate<Counter> { $0.count > 10 && !($0.done == true) || 3 >= $0.level }, entity: Self.entity))
        #expect(
            translated.condition
                == "(((COALESCE(\"a_count\", 0) > ?) AND (NOT (COALESCE(\"a_done\", 0) = ?))) "
                + "OR (? >= COALESCE(\"a_level\", 0)))")
        #expect(translated.arguments == [10.databaseValue, 1.databaseValue, 3.databaseValue])
        // Left to memory: a string, a computed or clamped property, an attribute whose default is not empty.
        #expect(PredicateSQL(#Predicate<Counter> { $0.label == "a" }, entity: Self.entity) == nil)
        #expect(PredicateSQL(#Predicate<Counter> { $0.doubled > 10 }, entity: Self.entity) == nil)
        #expect(PredicateSQL(#Predicate<Counter> { $0.capped > 10 }, entity: Self.entity) == nil)
        #expect(PredicateSQL(#Predicate<Counter> { $0.rank > 1 }, entity: Self.entity) == nil)
        #expect(PredicateSQL(#Predicate<Counter> { $0.count > 10 && $0.label == "a" }, entity: Self.entity) == nil)
    }

    @Test("a fetch filtered in SQL finds what memory finds, with the context's unsaved changes judged in memory")
    func sameAsMemory() throws {
        try withTemporaryFolder { folder in
            let coordinator = PersistentStoreCoordinator(managedObjectModel: Self.model)
            try coordinator.addPersistentStore(
                type: .sqlite, configuration: nil, at: folder.appendingPathComponent("counters.sqlite"), options: [:])
            let writer = ManagedObjectContext(concurrencyType: .privateQueue)
            writer.persistentStoreCoordinator = coordinator
            for index in 0..<60 {
                let counter = Counter(context: writer)
                counter.label = "\(index)"
                // Some left at their defaults.
                if index % 7 != 0 { counter.count = Int64(index * 37 % 50) - 10 }
                counter.level = Int32(index % 9)
                if index % 3 == 0 { counter.done = true }
            }
            try writer.save()

            let predicates: [Predicate<Counter>] = [
                #Predicate { $0.count > 10 },
                #Predicate { $0.count <= 0 || $0.done == true },
                #Predicate { !($0.level != 4) && $0.count >= -5 },
                #Predicate { 3 > $0.level && !$0.done },
                #Predicate { $0.doubled > 20 },
            ]
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            func labels(_ predicate: Predicate<Counter>, pending: Bool = true) throws -> [String] {
                var request = FetchRequest<Counter>(predicate: predicate)
                request.includesPendingChanges = pending
                return try context.fetch(request).map(\.label).sorted()
            }
            func inMemory(_ predicate: Predicate<Counter>) throws -> [String] {
                try context.fetch(FetchRequest<Counter>()).filter { try predicate.evaluate($0) }.map(\.label).sorted()
            }
            for predicate in predicates {
                let found = try labels(predicate)
                #expect(!found.isEmpty)
                #expect(found == (try inMemory(predicate)))
            }

            // Unsaved changes: a counter raised past 10, one lowered under it, one inserted, one deleted.
            let all = try context.fetch(FetchRequest<Counter>())
            let raised = try #require(all.first { $0.count <= 10 })
            let lowered = try #require(all.first { $0.count > 10 })
            let deleted = try #require(all.first { $0.count > 10 && $0 !== lowered })
            raised.count = 11
            lowered.count = 10
            context.delete(deleted)
            let inserted = Counter(context: context)
            inserted.label = "new"
            inserted.count = 99
            let over10 = #Predicate<Counter> { $0.count > 10 }
            let found = try labels(over10)
            #expect(found == (try inMemory(over10)))
            #expect(found.contains(raised.label) && found.contains("new"))
            #expect(!found.contains(lowered.label) && !found.contains(deleted.label))
            // As the store holds them: the saved values decide, and nothing unsaved is found.
            let stored = try labels(over10, pending: false)
            #expect(stored.contains(lowered.label) && stored.contains(deleted.label))
            #expect(!stored.contains(raised.label) && !stored.contains("new"))
        }
    }
}
