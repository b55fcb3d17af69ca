import Foundation
import RecordStore

// A child process for the record store's crash test: `record-store-test-helper <command> STORE CONTENT`.
//
// - `save-loop`: saves one item per save (tagged with one of three tags, merged by their uniqueness key) for ever,
//   printing `saved N` after save N returns.
// - `check`: opens the store (which writes any log its last run left in the outbox) and checks that the store and
//   this device's logs agree: logs 1…N, each whole, each item they insert in the store, and N items in all. Prints
//   `ok N`, or `problem: …` and exits with 1.
// Unknown commands exit with 64 (EX_USAGE).

let model = ManagedObjectModel(entities: [
    EntityDescription(
        name: "Item", attributes: [AttributeDescription(name: "title", type: .string)],
        relationships: [
            RelationshipDescription(name: "tags", destinationEntityName: "Tag", inverseName: "items", isToMany: true)
        ]),
    EntityDescription(
        name: "Tag", attributes: [AttributeDescription(name: "name", type: .string)],
        relationships: [
            RelationshipDescription(name: "items", destinationEntityName: "Item", inverseName: "tags", isToMany: true)
        ], uniquenessKey: ["name"]),
])

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 3 else { exit(64) }
let storeURL = URL(fileURLWithPath: arguments[1])
let contentURL = URL(fileURLWithPath: arguments[2], isDirectory: true)

/// Writes a line straight to standard output (unbuffered: a kill loses nothing reported).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    say("problem: \(message)")
    exit(1)
}

let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
let store: PersistentStore
do {
    store = try coordinator.addPersistentStore(
        type: .sqlite, configuration: nil, at: storeURL,
        options: [
            NSPersistentStoreUbiquitousContentNameKey: "Crash", NSPersistentStoreUbiquitousContentURLKey: contentURL,
            // Every log stays: the check reads them all.
            RecordStoreBaselineThresholdOption: Int.max,
        ])
} catch {
    fail("the store does not open: \(error)")
}
let context = ManagedObjectContext(concurrencyType: .privateQueue)
context.persistentStoreCoordinator = coordinator
context.mergePolicy = .mergeByPropertyObjectTrump

func itemCount() -> Int {
    (try? context.count(for: FetchRequest<ManagedObject>(entityName: "Item"))) ?? -1
}

switch arguments[0] {
case "save-loop":
    var next = itemCount() + 1
    while true {
        let item = ManagedObjectContext.insertNewObject(forEntityName: "Item", into: context)
        item.setValue("save \(next)", forKey: "title")
        let tag = ManagedObjectContext.insertNewObject(forEntityName: "Tag", into: context)
        tag.setValue("tag \(next % 3)", forKey: "name")
        item.setValue([tag], forKey: "tags")
        do {
            try context.save()
        } catch {
            fail("save \(next) failed: \(error)")
        }
        say("saved \(next)")
        next += 1
    }
case "check":
    guard let folder = store.ubiquitousContentFolder?.appendingPathComponent(store.identifier) else {
        fail("the store has no content folder")
    }
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    // Beside the logs: the store's progress file (and temporary files, hidden, that a kill left).
    let logs = names.filter { !$0.hasPrefix(".") && $0 != "progress" }.sorted()
    for (index, name) in logs.enumerated() {
        guard name == String(format: "%012d.log", index + 1) else { fail("log \(index + 1) is named \(name)") }
        guard let data = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path) else {
            fail("\(name) cannot be read")
        }
        let title: String
        do {
            title = try LogCheck.insertedTitle(in: Array(data), context: context)
        } catch {
            fail("\(name): \(error)")
        }
        guard title == "save \(index + 1)" else { fail("\(name) inserts \(title)") }
    }
    let count = itemCount()
    guard count == logs.count else { fail("\(count) items in the store, \(logs.count) logs") }
    if let leftover = names.first(where: { $0.hasPrefix(".") }) { fail("\(leftover) was left in the log folder") }
    say("ok \(count)")
default: exit(64)
}
