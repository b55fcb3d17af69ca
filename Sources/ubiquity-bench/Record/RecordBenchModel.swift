import Foundation
import RecordStore

/// The model the record benchmarks save, fetch and import: items of four attributes (a string, an integer, a
/// double, a date), and readings of ten for the imports.
enum RecordBenchModel {
    static let item = EntityDescription(
        name: "Item", managedObjectClass: BenchItem.self,
        attributes: [
            AttributeDescription(name: "title", type: .string, defaultValue: .string("")),
            AttributeDescription(name: "quantity", type: .integer64, defaultValue: .integer(0)),
            AttributeDescription(name: "price", type: .double, defaultValue: .double(0)),
            AttributeDescription(
                name: "added", type: .date, defaultValue: .date(Date(timeIntervalSinceReferenceDate: 0))),
        ])

    static let reading = EntityDescription(
        name: "Reading", managedObjectClass: BenchReading.self,
        attributes: [
            AttributeDescription(name: "label", type: .string, defaultValue: .string("")),
            AttributeDescription(name: "site", type: .string, defaultValue: .string("")),
            AttributeDescription(name: "unit", type: .string, defaultValue: .string("")),
            AttributeDescription(name: "sequence", type: .integer64, defaultValue: .integer(0)),
            AttributeDescription(name: "count", type: .integer64, defaultValue: .integer(0)),
            AttributeDescription(name: "status", type: .integer64, defaultValue: .integer(0)),
            AttributeDescription(name: "value", type: .double, defaultValue: .double(0)),
            AttributeDescription(name: "low", type: .double, defaultValue: .double(0)),
            AttributeDescription(name: "high", type: .double, defaultValue: .double(0)),
            AttributeDescription(
                name: "taken", type: .date, defaultValue: .date(Date(timeIntervalSinceReferenceDate: 0))),
        ])

    /// Every reading's properties are set when it is inserted: an insert of one is this many property changes.
    static let readingProperties = 10

    static let model = ManagedObjectModel(version: 1, entities: [item, reading])
}

final class BenchItem: ManagedObject {
    @Attribute("title") var title: String
    @Attribute("quantity") var quantity: Int64
    @Attribute("price") var price: Double
    @Attribute("added") var added: Date
}

final class BenchReading: ManagedObject {
    @Attribute("label") var label: String
    @Attribute("site") var site: String
    @Attribute("unit") var unit: String
    @Attribute("sequence") var sequence: Int64
    @Attribute("count") var count: Int64
    @Attribute("status") var status: Int64
    @Attribute("value") var value: Double
    @Attribute("low") var low: Double
    @Attribute("high") var high: Double
    @Attribute("taken") var taken: Date
}

/// One item's values, the same for the record store and for GRDB: its `index` decides them all.
struct ItemValues: Sendable {
    var id: UUID
    var title: String
    var quantity: Int64
    var price: Double
    var added: Date

    /// Quantities run 0…39, so `quantity > 10` matches 29 items in 40 (72.5 %).
    init(_ index: Int) {
        id = UUID()
        title = "Item \(index)"
        quantity = Int64(index % 40)
        price = Double(index % 1_000) * 0.25
        added = Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(index))
    }

    /// The items `quantity > threshold` matches among the first `count`.
    static func matching(count: Int, threshold: Int64) -> Int {
        (0..<count).count(where: { Int64($0 % 40) > threshold })
    }
}

/// One reading's ten values.
struct ReadingValues: Sendable {
    var id: UUID
    var label: String
    var site: String
    var unit: String
    var sequence: Int64
    var count: Int64
    var status: Int64
    var value: Double
    var low: Double
    var high: Double
    var taken: Date

    init(_ index: Int) {
        id = UUID()
        label = "Reading \(index)"
        site = "Site \(index % 97)"
        unit = index % 2 == 0 ? "kPa" : "°C"
        sequence = Int64(index)
        count = Int64(index % 13)
        status = Int64(index % 3)
        value = Double(index) * 0.5
        low = Double(index) * 0.5 - 1
        high = Double(index) * 0.5 + 1
        taken = Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(index))
    }
}

extension BenchItem {
    /// Inserts an item of `values` into `context`.
    @discardableResult
    static func insert(_ values: ItemValues, into context: ManagedObjectContext) -> BenchItem {
        let item = BenchItem(context: context)
        item.title = values.title
        item.quantity = values.quantity
        item.price = values.price
        item.added = values.added
        return item
    }
}

extension BenchReading {
    /// Inserts a reading of `values` into `context`, setting all ten properties.
    static func insert(_ values: ReadingValues, into context: ManagedObjectContext) {
        let reading = BenchReading(context: context)
        reading.label = values.label
        reading.site = values.site
        reading.unit = values.unit
        reading.sequence = values.sequence
        reading.count = values.count
        reading.status = values.status
        reading.value = values.value
        reading.low = values.low
        reading.high = values.high
        reading.taken = values.taken
    }
}
