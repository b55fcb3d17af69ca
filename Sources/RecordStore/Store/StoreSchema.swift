import Foundation
import GRDB

/// How a model's objects and links are laid out in a store's database.
///
/// - Each entity has a table `"e_<Entity>"`: the object's id (16 bytes), its existence register (`_live`,
///   `_etime`, `_edevice`), a column per attribute (`"a_<name>"`) and per to-one stored as a register
///   (`"r_<name>"`, the target's UUID), and `_stamps`, the stamp of every property that has a register
///   (``StampList``; empty when every column that holds a value has the existence register's stamp and no other
///   property has a register, as for every object a save inserts).
/// - Each stored to-many has a table `"l_<Entity>.<relationship>"`: one row per link, present or removed, with the
///   stamp of its latest change, indexed by target for the inverse side's reads.
///
/// Names are letters, digits and underscores (``ManagedObjectModel`` checks), so a dot never occurs in one and
/// quoted names never clash.
struct StoreSchema: Sendable {
    let model: ManagedObjectModel
    let tables: [String: EntityTable]
    /// The same tables in the model's order, searched in turn while there are few.
    private let tableList: [EntityTable]

    init(model: ManagedObjectModel) {
        self.model = model
        var tables: [String: EntityTable] = [:]
        var tableList: [EntityTable] = []
        for entity in model.entities where tables[entity.name] == nil {
            let table = EntityTable(entity: entity, model: model)
            tables[entity.name] = table
            tableList.append(table)
        }
        self.tables = tables
        self.tableList = tableList
    }

    /// The table of `entity`: the names compared in turn in a model of a few entities (a save and a fetch ask once
    /// for each object, and equal names usually compare as equal bits at once), else looked up by hash.
    func table(_ entity: String) throws(RecordStoreError) -> EntityTable {
        let found =
            tableList.count <= EntityDescription.namesComparedInTurn
            ? tableList.first { $0.entity.name == entity } : tables[entity]
        guard let table = found else {
            throw RecordStoreError(.unknownEntity, "the model has no entity named \(String(reflecting: entity))")
        }
        return table
    }

    /// Every column that may refer to a file of ``ExternalData``: its table's quoted name and its name.
    var externalColumns: [(table: String, column: String)] {
        tables.values.flatMap { table in table.columns.filter(\.isExternal).map { (table.name, $0.column) } }
    }

    /// The table of the links `relationship` of `entity` stores.
    static func linkTable(_ entity: String, _ relationship: String) -> String { "\"l_\(entity).\(relationship)\"" }

    /// Creates what is missing: tables of new entities, columns of new attributes and to-ones, link tables of new
    /// to-manys. Never drops or changes what is there (lightweight migration).
    func create(in db: Database) throws {
        for entity in model.entities {
            let table = tables[entity.name]!
            let existing =
                try db.tableExists("e_\(entity.name)")
                ? Set(try db.columns(in: "e_\(entity.name)").map(\.name)) : []
            if existing.isEmpty {
                let columns = table.columns.map { "\"\($0.column)\"" + ($0.isObject ? " BLOB" : "") }
                try db.execute(
                    sql: """
                        CREATE TABLE \(table.name) (
                            id BLOB PRIMARY KEY NOT NULL, _live INTEGER, _etime INTEGER, _edevice BLOB,
                            _stamps BLOB NOT NULL\(columns.map { ", " + $0 }.joined())) WITHOUT ROWID
                        """)
            } else {
                for column in table.columns where !existing.contains(column.column) {
                    try db.execute(sql: "ALTER TABLE \(table.name) ADD COLUMN \"\(column.column)\"")
                }
            }
            for column in table.columns where column.isObject {
                try db.execute(
                    sql: "CREATE INDEX IF NOT EXISTS \"e_\(entity.name).\(column.column)\" "
                        + "ON \(table.name) (\"\(column.column)\")")
            }
            for relationship in table.linkRelationships {
                let name = Self.linkTable(entity.name, relationship)
                try db.execute(
                    sql: """
                        CREATE TABLE IF NOT EXISTS \(name) (
                            source BLOB NOT NULL, target BLOB NOT NULL, present INTEGER NOT NULL,
                            ltime INTEGER NOT NULL, ldevice BLOB NOT NULL, PRIMARY KEY (source, target)) WITHOUT ROWID;
                        CREATE INDEX IF NOT EXISTS "l_\(entity.name).\(relationship).target" ON \(name) (target);
                        """)
            }
        }
    }
}

/// The table of one entity and the statements that read and write its rows: a class, since every read and write of
/// an object looks its table up.
final class EntityTable: Sendable {
    let entity: EntityDescription
    /// The quoted table name.
    let name: String
    /// The attribute and to-one register columns, in the order of the statements' arguments.
    let columns: [PropertyColumn]
    /// The columns' properties, as snapshots hold them, and each one's index.
    let layout: SnapshotLayout
    /// Each column's value when its property was never set: the attribute's default, nothing for a to-one.
    let defaults: [RecordValue]
    /// Each column's attribute type (`nil` for a to-one) and whether it may refer to a file: what reading a row
    /// asks of a column, kept apart from its names so that a fetch reading thousands of rows copies none.
    let columnTypes: [AttributeType?]
    let columnsAllowingFiles: [Bool]
    /// The to-manys stored as links from this entity.
    let linkRelationships: [String]
    let selectSQL: String
    let upsertSQL: String
    /// ``upsertSQL``'s insert for an id the table does not hold yet; it leaves a row that is there untouched.
    let insertSQL: String

    struct PropertyColumn: Sendable {
        let property: String
        let column: String
        /// The attribute's type, or `nil` for a to-one register.
        let type: AttributeType?
        let destination: String
        /// Whether large values may be kept in files of their own (``ExternalData``).
        var isExternal = false

        var isObject: Bool { type == nil }
    }

    init(entity: EntityDescription, model: ManagedObjectModel) {
        self.entity = entity
        self.name = "\"e_\(entity.name)\""
        var columns = entity.attributes.map {
            PropertyColumn(
                property: $0.name, column: "a_\($0.name)", type: $0.type, destination: "",
                isExternal: $0.type == .binaryData && $0.allowsExternalBinaryDataStorage)
        }
        var links: [String] = []
        for relationship in entity.relationships {
            switch model.storage(ofRelationship: relationship.name, in: entity.name) {
            case .register:
                columns.append(
                    PropertyColumn(
                        property: relationship.name, column: "r_\(relationship.name)", type: nil,
                        destination: relationship.destinationEntityName))
            case .links: links.append(relationship.name)
            case .inverse, nil: break
            }
        }
        self.columns = columns
        let attributes = Dictionary(uniqueKeysWithValues: entity.attributes.map { ($0.name, $0) })
        self.defaults = columns.map { attributes[$0.property]?.defaultValue ?? .null }
        self.columnTypes = columns.map(\.type)
        self.columnsAllowingFiles = columns.map(\.isExternal)
        self.layout = SnapshotLayout(columns.map(\.property))
        self.linkRelationships = links
        let names = columns.map { "\"\($0.column)\"" }
        self.selectSQL =
            "SELECT _live, _etime, _edevice, _stamps\(names.map { ", " + $0 }.joined()) FROM \(name) WHERE id = ?"
        let insert =
            "INTO \(name) (id, _live, _etime, _edevice, _stamps\(names.map { ", " + $0 }.joined())) "
            + "VALUES (?, ?, ?, ?, ?\(String(repeating: ", ?", count: columns.count)))"
        self.upsertSQL = "INSERT OR REPLACE " + insert
        self.insertSQL = "INSERT " + insert + " ON CONFLICT (id) DO NOTHING"
    }

    /// The select list of ``snapshot(from:offset:external:)``: the stamps, then every column.
    var snapshotColumns: String { "_stamps" + columns.map { ", \"\($0.column)\"" }.joined() }

    /// Reads an app's view of an object from a row of ``snapshotColumns`` starting at `offset`: each property's
    /// value, an attribute never set at its default. The stamps are decoded only when that question arises (an empty
    /// column of an attribute with a default: never set, or set to nothing), which a fetch of many rows rarely asks.
    func snapshot(from row: some RowReading, offset: Int = 0, external: ExternalData? = nil) throws(RecordStoreError)
        -> ObjectSnapshot
    {
        var values: [RecordValue] = []
        values.reserveCapacity(columns.count)
        try appendValues(from: row, offset: offset, external: external, to: &values) {
            Data.fromDatabaseValue(row.databaseValue(at: offset)) ?? Data()
        }
        return ObjectSnapshot(layout: layout, values: values)
    }

    /// The select list of a fetch of many rows: the place of the stamps, left empty, then every column. The stamps
    /// are the widest column and a fetch rarely needs them: ``appendValues(from:offset:external:to:stamps:)`` asks
    /// for an object's own when it does.
    var fetchColumns: String { "NULL" + columns.map { ", \"\($0.column)\"" }.joined() }

    /// Appends the values of ``snapshot(from:offset:external:)`` to `values`, for a fetch reading many rows into one
    /// buffer; `stamps` reads the object's stamps when the row leaves them out (``fetchColumns``).
    func appendValues(
        from row: some RowReading, offset: Int, external: ExternalData?, to values: inout some RecordValueSink,
        stamps: () throws(RecordStoreError) -> Data
    ) throws(RecordStoreError) {
        let base = values.count
        var unsure: [Int] = []
        // By index, each column read where it lies: a fetch reads thousands of rows, and copying a column's
        // description out of the array for each cost more than reading its value.
        for index in columnTypes.indices {
            // Most columns hold their attribute's type as SQLite stores it: read at once, with no value in between.
            if let type = columnTypes[index], row.appendPlainValue(at: offset + 1 + index, type: type, to: &values) {
                continue
            }
            let stored = row.databaseValue(at: offset + 1 + index)
            if stored.isNull {
                values.append(.null)
                if !defaults[index].isNull { unsure.append(index) }
            } else if columnsAllowingFiles[index], let external, case .string(let reference) = stored.storage,
                reference.hasPrefix(ExternalData.referencePrefix)
            {
                values.append(.data(try external.load(reference, for: "\(entity.name).\(columns[index].property)")))
            } else if let type = columnTypes[index], let value = PropertyColumn.value(from: stored, type: type) {
                values.append(value)
            } else {
                // A to-one's target, or a value that is not of its attribute's type (an error naming the column).
                values.append(try columns[index].value(from: stored, entity: entity))
            }
        }
        if !unsure.isEmpty {
            let stamps = try stamps()
            // Implicit stamps name only the columns that hold a value, and these hold none.
            let stamped = stamps.isEmpty ? [] : Set(try StampList.decode(stamps).map(\.0))
            for index in unsure where !stamped.contains(columns[index].property) {
                values.replace(at: base + index, with: defaults[index])
            }
        }
    }

    /// The references to files that the columns allowing them hold for `id`.
    func externalReferences(of id: ManagedObjectID, in db: Database) throws -> Set<String> {
        var references: Set<String> = []
        for column in columns where column.isExternal {
            let sql = "SELECT \"\(column.column)\" FROM \(name) WHERE id = ? AND typeof(\"\(column.column)\") = 'text'"
            if let reference = try String.fetchOne(db, sql: sql, arguments: [id.uuid.data]) {
                references.insert(reference)
            }
        }
        return references
    }

    /// The select list that ``record(from:)`` reads, for statements of other shapes.
    var recordColumns: String {
        "_live, _etime, _edevice, _stamps" + columns.map { ", \"\($0.column)\"" }.joined()
    }

    /// Reads a record from a row of ``selectSQL`` (or any row whose first columns are ``recordColumns``,
    /// starting at `offset`).
    func record(from row: some RowReading, offset: Int = 0, external: ExternalData? = nil) throws(RecordStoreError)
        -> ObjectRecord
    {
        var record = ObjectRecord()
        if case .int64(let live) = row.databaseValue(at: offset).storage {
            guard case .int64(let time) = row.databaseValue(at: offset + 1).storage,
                case .blob(let device) = row.databaseValue(at: offset + 2).storage, device.count == 16
            else {
                throw RecordStoreError(.storeFailed, "a record of \(entity.name) has an unreadable existence stamp")
            }
            record.existence = Register(live != 0, stamp: Stamp(time: UInt64(bitPattern: time), device: UUID(device)))
        }
        let stamps = Data.fromDatabaseValue(row.databaseValue(at: offset + 3)) ?? Data()
        let registers: [(String, Stamp)]
        if stamps.isEmpty {
            // Implicit: each column holding a value at the existence register's stamp.
            guard let existence = record.existence else {
                throw RecordStoreError(.storeFailed, "a record of \(entity.name) has no stamps and no existence stamp")
            }
            registers = columns.indices.compactMap { index in
                row.databaseValue(at: offset + 4 + index).isNull
                    ? nil : (columns[index].property, existence.stamp)
            }
        } else {
            registers = try StampList.decode(stamps)
        }
        for (property, stamp) in registers {
            // A property a later model no longer stores (as a column): its register is not read.
            guard let index = layout.index[property] else { continue }
            let column = columns[index]
            let stored = row.databaseValue(at: offset + 4 + index)
            let value: RecordValue
            if column.isExternal, let external, case .string(let reference) = stored.storage,
                reference.hasPrefix(ExternalData.referencePrefix)
            {
                value = .data(try external.load(reference, for: "\(entity.name).\(property)"))
            } else {
                value = try column.value(from: stored, entity: entity)
            }
            record.values[property] = Register(value, stamp: stamp)
        }
        return record
    }

    /// Binds the parameters of ``upsertSQL`` or ``insertSQL`` for `record`.
    /// A large value of a column that allows it goes to a file of `external`'s, and the column refers to it.
    func bind(_ record: ObjectRecord, id: ManagedObjectID, external: ExternalData?, to bindings: inout DirectBindings)
        throws(RecordStoreError)
    {
        bindings.bind(id.uuid)
        if let existence = record.existence {
            bindings.bind(Int64(existence.value ? 1 : 0))
            bindings.bind(Int64(bitPattern: existence.stamp.time))
            bindings.bind(existence.stamp.device)
        } else {
            for _ in 0..<3 { bindings.bindNull() }
        }
        bindings.bind(bytes: implicitlyStamped(record) ? Data() : StampList.encode(record.values))
        try bindColumns(external: external, to: &bindings) { record.values[columns[$0].property]?.value ?? .null }
    }

    /// Whether ``record(from:offset:external:)`` reads `record`'s registers back from its columns alone: each is a
    /// column's, holding a value the column stores as one, at the existence register's stamp.
    private func implicitlyStamped(_ record: ObjectRecord) -> Bool {
        guard let existence = record.existence else { return false }
        return record.values.allSatisfy {
            $0.value.stamp == existence.stamp && Self.storedAsValue($0.value.value)
                && layout.position(of: $0.key) != nil
        }
    }

    /// Whether every one of `properties` has a column.
    func hasColumns(_ properties: [String]) -> Bool {
        properties.allSatisfy { layout.position(of: $0) != nil }
    }

    /// Whether a new object's `values`, all of properties with columns (``hasColumns(_:)``), leave its stamps
    /// implicit: each is one a column stores as a value.
    static func implicitlyStamped(_ values: PropertyMap<RecordValue>) -> Bool {
        values.allSatisfy { storedAsValue($0.value) }
    }

    /// Whether a column holds `value` as something other than NULL. Empty text and bytes are left out: some ways
    /// of binding them store NULL.
    private static func storedAsValue(_ value: RecordValue) -> Bool {
        switch value {
        case .null: false
        case .string(let text): !text.isEmpty
        case .data(let bytes): !bytes.isEmpty
        default: true
        }
    }

    /// Binds the parameters of ``insertSQL`` for the object `change` inserts at `stamp`: the record merging it into
    /// nothing would give, without making that record.
    /// - Parameter stamps: `StampList.encode(change.values, at: stamp)`, which objects with the same properties share,
    ///   or nothing when they are implicit.
    /// - Parameter places: ``valuePlaces(of:)`` of `change.values`.
    func bind(
        _ change: ObjectChange, stamp: Stamp, stamps: Data, places: [Int], external: ExternalData?,
        to bindings: inout DirectBindings
    ) throws(RecordStoreError) {
        bindings.bind(change.id.uuid)
        bindings.bind(Int64(1))
        bindings.bind(Int64(bitPattern: stamp.time))
        bindings.bind(stamp.device)
        bindings.bind(bytes: stamps)
        // Each column's value found where it lies among the change's values, not searched for by name.
        try bindColumns(external: external, to: &bindings) { index in
            let place = places[index]
            return place < 0 ? .null : change.values.value(atPlace: place)
        }
    }

    /// For each column, where its property's value is among the entries of `values` (-1 for none): the same for
    /// every new object a save inserts with the same properties, so worked out once for them.
    func valuePlaces(of values: PropertyMap<RecordValue>) -> [Int] {
        columns.map { values.place(of: $0.property) ?? -1 }
    }

    /// Binds each column's value, `value` giving it by the column's index.
    private func bindColumns(
        external: ExternalData?, to bindings: inout DirectBindings, _ value: (Int) -> RecordValue
    ) throws(RecordStoreError) {
        for index in columns.indices {
            let value = value(index)
            if columns[index].isExternal, let external, case .data(let data) = value,
                data.count > AttributeDescription.externalStorageThreshold
            {
                bindings.bind(text: try external.store(data))
            } else {
                bindings.bind(value)
            }
        }
    }
}

extension DirectBindings {
    /// Binds a value as a column holds it: numbers as numbers, decimals and URLs as text, UUIDs and objects as 16
    /// bytes. SQLite keeps no NaN, so a NaN is held as the text `NaN`; text with a NUL is held as its UTF-8 bytes
    /// (SQLite's text ends at a NUL as GRDB reads it).
    mutating func bind(_ value: RecordValue) {
        switch value {
        case .null: bindNull()
        case .string(let text): if text.utf8.contains(0) { bind(bytes: Data(text.utf8)) } else { bind(text: text) }
        case .integer(let number): bind(number)
        case .double(let number): if number.isNaN { bind(text: "NaN") } else { bind(number) }
        case .decimal(let number): bind(text: number.canonicalText)
        case .boolean(let flag): bind(Int64(flag ? 1 : 0))
        case .date(let date):
            let seconds = date.timeIntervalSinceReferenceDate
            if seconds.isNaN { bind(text: "NaN") } else { bind(seconds) }
        case .uuid(let uuid): bind(uuid)
        case .url(let url): bind(text: url.absoluteString)
        case .data(let data): bind(bytes: data)
        case .object(let id): bind(id.uuid)
        }
    }
}

extension EntityTable.PropertyColumn {
    /// Reads what ``DirectBindings/bind(_:)-(RecordValue)`` wrote.
    func value(from stored: DatabaseValue, entity: EntityDescription) throws(RecordStoreError) -> RecordValue {
        func unreadable() -> RecordStoreError {
            RecordStoreError(.storeFailed, "\(entity.name).\(property) holds \(stored), not a value of its type")
        }
        if stored.isNull { return .null }
        guard let type else {
            guard let data = Data.fromDatabaseValue(stored), data.count == 16 else { throw unreadable() }
            return .object(ManagedObjectID(entityName: destination, uuid: UUID(data)))
        }
        guard let value = Self.value(from: stored, type: type) else { throw unreadable() }
        return value
    }

    /// A value of an attribute of `type` from what ``DirectBindings/bind(_:)-(RecordValue)`` wrote; `nil` when it is
    /// not one.
    static func value(from stored: DatabaseValue, type: AttributeType) -> RecordValue? {
        if stored.isNull { return .null }
        func number() -> Double? {
            if case .string("NaN") = stored.storage { return .nan }
            return Double.fromDatabaseValue(stored)
        }
        let value: RecordValue? =
            switch type {
            case .string:
                if case .blob(let bytes) = stored.storage {
                    String(validating: bytes, as: UTF8.self).map { .string($0) }
                } else {
                    String.fromDatabaseValue(stored).map { .string($0) }
                }
            case .integer16, .integer32, .integer64:
                if case .int64(let number) = stored.storage { .integer(number) } else { nil }
            case .double: number().map { .double($0) }
            case .decimal: String.fromDatabaseValue(stored).flatMap(Decimal.init(canonicalText:)).map { .decimal($0) }
            case .boolean: if case .int64(let number) = stored.storage { .boolean(number != 0) } else { nil }
            case .date: number().map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
            case .uuid:
                Data.fromDatabaseValue(stored).flatMap { $0.count == 16 ? RecordValue.uuid(UUID($0)) : nil }
            case .uri: String.fromDatabaseValue(stored).flatMap { URL(string: $0) }.map { .url($0) }
            case .binaryData: Data.fromDatabaseValue(stored).map { .data($0) }
            }
        return value
    }
}

/// The stamps of an object's property registers, as `_stamps` holds them: the distinct stamps once each, then
/// each property's name with the index of its stamp (most objects have one stamp, that of the save that made them).
enum StampList {
    /// The stamps of `values`' properties all set at `stamp`: the bytes ``encode(_:)`` writes for their registers.
    static func encode(_ values: PropertyMap<RecordValue>, at stamp: Stamp) -> Data {
        var writer = LogWriter(capacity: 32 + values.count * 12)
        writer.writeVarint(values.isEmpty ? 0 : 1)
        if !values.isEmpty {
            writer.writeFixed(stamp.time)
            writer.writeUUID(stamp.device)
        }
        writer.writeVarint(values.count)
        for (name, _) in values {
            writer.writeString(name)
            writer.writeVarint(0)
        }
        return Data(writer.bytes)
    }

    static func encode(_ values: PropertyMap<Register<RecordValue>>) -> Data {
        var stamps: [Stamp] = []
        var writer = LogWriter(capacity: 32 + values.count * 12)
        // An object has few distinct stamps (one per save that touched it): a search of them beats hashing.
        let entries = values.map { entry -> (String, Int) in
            if let index = stamps.firstIndex(of: entry.value.stamp) { return (entry.key, index) }
            stamps.append(entry.value.stamp)
            return (entry.key, stamps.count - 1)
        }
        writer.writeVarint(stamps.count)
        for stamp in stamps {
            writer.writeFixed(stamp.time)
            writer.writeUUID(stamp.device)
        }
        writer.writeVarint(entries.count)
        for (name, index) in entries {
            writer.writeString(name)
            writer.writeVarint(index)
        }
        return Data(writer.bytes)
    }

    static func decode(_ data: Data) throws(RecordStoreError) -> [(String, Stamp)] {
        do throws(RecordStoreError) {
            var reader = LogReader(Array(data))
            var stamps: [Stamp] = []
            for _ in 0..<(try reader.readCount(minimumSize: 24)) {
                stamps.append(Stamp(time: try reader.readFixed(), device: try reader.readUUID()))
            }
            var entries: [(String, Stamp)] = []
            for _ in 0..<(try reader.readCount(minimumSize: 2)) {
                let name = try reader.readString()
                let index = try reader.readVarint()
                guard index < UInt64(stamps.count) else { throw LogReader.corrupt("a stamp index past the stamps") }
                entries.append((name, stamps[Int(index)]))
            }
            return entries
        } catch {
            throw RecordStoreError(.storeFailed, "an object's stamps cannot be read: \(error.message)")
        }
    }
}

extension UUID {
    /// The UUID's 16 bytes.
    var data: Data { withUnsafeBytes(of: uuid) { Data($0) } }

    /// The UUID of 16 bytes (the caller checks the count).
    init(_ data: Data) {
        // Not `UUID().uuid`: on Linux a new UUID reads the system's random source, once for every row read.
        // Not `Data.copyBytes(to:)` either: its generic path costs more than the rest of reading a row.
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { target in
            data.withUnsafeBytes { source in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source.prefix(target.count)))
            }
        }
        self.init(uuid: uuid)
    }
}
