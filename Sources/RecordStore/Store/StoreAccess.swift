import Foundation
import GRDB
import GRDBSQLite

/// Reads and writes of one store's database inside one transaction: the merge's target, the reads an app's
/// objects are made from, and the store's own bookkeeping (its clock, its saves, the logs it has applied).
struct StoreAccess {
    let db: Database
    let schema: StoreSchema
    /// Where large values live; `nil` for a store in memory, which keeps them in its database.
    var external: ExternalData? = nil
    /// What the last new object's row was written with, for the next of a save's thousands (``insertNew(_:stamp:)``).
    private var lastInsert: InsertMemory?
    /// The log ``save(_:physicalMilliseconds:keepingLog:forgettingUpTo:)`` kept in the outbox, for the export after
    /// the commit.
    private(set) var keptLog: RecordDatabase.KeptLog?

    init(db: Database, schema: StoreSchema, external: ExternalData? = nil) {
        self.db = db
        self.schema = schema
        self.external = external
    }

    /// The table and statement of the entity of the last new object written, and the stamp list of its properties:
    /// the objects of a save come in the order of their ids, entity by entity, and share a stamp and most often the
    /// names of their properties, so the next object's row is bound without looking its statement up by its SQL
    /// (hashing the whole text) or writing the same stamp list again.
    private final class InsertMemory {
        let entityName: String
        let table: EntityTable
        let statement: Statement
        var stamp: Stamp
        var properties: [String] = []
        var stamps: Data
        /// Whether every one of ``properties`` has a column.
        var columnsOnly = true
        /// ``EntityTable/valuePlaces(of:)`` for ``properties``.
        var places: [Int] = []

        init(entityName: String, table: EntityTable, statement: Statement, stamp: Stamp) {
            self.entityName = entityName
            self.table = table
            self.statement = statement
            self.stamp = stamp
            self.stamps = StampList.encode([:], at: stamp)
            self.places = table.valuePlaces(of: [:])
        }
    }

    var model: ManagedObjectModel { schema.model }
}

// MARK: - The merge's target

extension StoreAccess: MergeTarget {
    func record(_ id: ManagedObjectID) throws -> ObjectRecord? {
        let table = try schema.table(id.entityName)
        var record: ObjectRecord?
        let external = external
        try db.cachedStatement(sql: table.selectSQL).forEachRow {
            $0.bind(id.uuid)
        } _: { row in
            record = try table.record(from: row, external: external)
        }
        return record
    }

    mutating func setRecord(_ record: ObjectRecord, for id: ManagedObjectID) throws {
        let table = try schema.table(id.entityName)
        // The files the row referred to go once nothing refers to them after this transaction.
        let replaced = external == nil ? [] : try table.externalReferences(of: id, in: db)
        let external = external
        try db.cachedStatement(sql: table.upsertSQL).run { try table.bind(record, id: id, external: external, to: &$0) }
        external?.removeAfterCommit(replaced, in: db, schema: schema)
    }

    mutating func insertNew(_ change: ObjectChange, stamp: Stamp) throws -> Bool {
        let memory: InsertMemory
        if let last = lastInsert, last.entityName == change.id.entityName {
            memory = last
        } else {
            let table = try schema.table(change.id.entityName)
            memory = InsertMemory(
                entityName: change.id.entityName, table: table,
                statement: try db.cachedStatement(sql: table.insertSQL), stamp: stamp)
            lastInsert = memory
        }
        if memory.stamp != stamp || !change.values.keys(equal: memory.properties) {
            memory.stamp = stamp
            memory.properties = change.values.keys
            memory.stamps = StampList.encode(change.values, at: stamp)
            memory.columnsOnly = memory.table.hasColumns(memory.properties)
            memory.places = memory.table.valuePlaces(of: change.values)
        }
        // Most new objects' stamps are implicit: those of the values their columns hold, at the insert's stamp.
        let stamps =
            memory.columnsOnly && EntityTable.implicitlyStamped(change.values) ? Data() : memory.stamps
        let external = external
        try memory.statement.run {
            try memory.table.bind(
                change, stamp: stamp, stamps: stamps, places: memory.places, external: external, to: &$0)
        }
        return sqlite3_changes(db.sqliteConnection) > 0
    }

    func link(_ key: LinkKey) throws -> Register<Bool>? {
        let table = StoreSchema.linkTable(key.source.entityName, key.relationship)
        let statement = try db.cachedStatement(
            sql: "SELECT present, ltime, ldevice FROM \(table) WHERE source = ? AND target = ?")
        guard let row = try Row.fetchOne(statement, arguments: [key.source.uuid.data, key.target.uuid.data]) else {
            return nil
        }
        return Register(row[0] as Int64 != 0, stamp: Stamp(row: row, at: 1))
    }

    mutating func setLink(_ link: Register<Bool>, for key: LinkKey) throws {
        let table = StoreSchema.linkTable(key.source.entityName, key.relationship)
        try db.cachedStatement(
            sql: "INSERT OR REPLACE INTO \(table) (source, target, present, ltime, ldevice) VALUES (?, ?, ?, ?, ?)"
        ).execute(arguments: [
            key.source.uuid.data, key.target.uuid.data, link.value ? 1 : 0, Int64(bitPattern: link.stamp.time),
            link.stamp.device.data,
        ])
    }
}

extension Stamp {
    /// The stamp in a row's columns `index` (time) and `index + 1` (device).
    init(row: Row, at index: Int) {
        let time: Int64 = row[index]
        let device: Data = row[index + 1]
        self.init(time: UInt64(bitPattern: time), device: UUID(device))
    }
}

// MARK: - What an app reads

/// An object's attributes and stored to-one targets as the store holds them, unset attributes at their defaults:
/// a value per column of its entity's table, in the columns' order. The snapshots a fetch reads share one buffer
/// of its rows, as Core Data's row cache does, so that reading ten thousand rows makes one array rather than ten
/// thousand; the buffer lives while an object of the fetch still holds its snapshot.
struct ObjectSnapshot: Sendable, Hashable {
    private let storage: Storage

    private enum Storage: Sendable {
        /// The snapshot's own values.
        case own(SnapshotLayout, [RecordValue])
        /// A fetch's rows, this snapshot's values from `start` on: one reference for each of the thousands of
        /// objects a fetch makes, the layout the rows'.
        case shared(SnapshotRows, start: Int)
        /// What a save stored of an object it inserted with attributes only: the values set, by name, over the
        /// attributes' defaults (the layout's first properties, in the entity's order), its to-ones empty. The
        /// object's values are kept as they were set, rather than copied into an array of their own for each of the
        /// thousands of objects a large save inserts.
        case inserted(SnapshotLayout, defaults: [RecordValue], values: PropertyMap<RecordValue>)
    }

    /// The snapshot of an object that was never stored: every property reads as unset.
    static let empty = ObjectSnapshot(layout: .empty, values: [])

    /// A snapshot with values of its own, one per property of `layout`.
    init(layout: SnapshotLayout, values: [RecordValue]) {
        storage = .own(layout, values)
    }

    /// The snapshot of the row of `rows` whose values start at `start`.
    init(rows: SnapshotRows, start: Int) {
        storage = .shared(rows, start: start)
    }

    /// The snapshot of an object a save inserted with the attribute `values` and no relationships: `defaults` (one
    /// for each of the layout's first properties, its attributes) for the rest, nothing for its to-ones.
    init(layout: SnapshotLayout, defaults: [RecordValue], values: PropertyMap<RecordValue>) {
        storage = .inserted(layout, defaults: defaults, values: values)
    }

    /// The properties the snapshot holds values of, in order.
    var layout: SnapshotLayout {
        switch storage {
        case .own(let layout, _), .inserted(let layout, _, _): layout
        case .shared(let rows, _): rows.layout
        }
    }

    /// Each property's value, in the layout's order.
    var values: [RecordValue] {
        switch storage {
        case .own(_, let values): values
        case .shared(let rows, let start): (start..<start + rows.layout.properties.count).map { rows[$0] }
        case .inserted(let layout, _, _): layout.properties.indices.map { self[position: $0] }
        }
    }

    /// The value of the property at `position` in the layout.
    subscript(position position: Int) -> RecordValue {
        switch storage {
        case .own(_, let values): values[position]
        case .shared(let rows, let start): rows[start + position]
        case .inserted(let layout, let defaults, let values):
            position < defaults.count ? values[layout.properties[position]] ?? defaults[position] : .null
        }
    }

    /// The value of `property`; `nil` for a property the snapshot does not hold.
    subscript(property: String) -> RecordValue? {
        layout.position(of: property).map { self[position: $0] }
    }

    /// The values by property name.
    var byProperty: [String: RecordValue] {
        Dictionary(zip(layout.properties, values), uniquingKeysWith: { first, _ in first })
    }

    static func == (lhs: ObjectSnapshot, rhs: ObjectSnapshot) -> Bool {
        lhs.layout == rhs.layout && lhs.layout.properties.indices.allSatisfy { lhs[position: $0] == rhs[position: $0] }
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(layout)
        for position in layout.properties.indices { hasher.combine(self[position: position]) }
    }
}

/// What a fetch read: the objects' ids and their snapshots, made one at a time as the fetch registers each object
/// rather than gathered into an array of their own first.
///
/// The rows are kept in segments (``SnapshotRows``) of a fixed size, each allocated once at its full size but the
/// first: a single buffer grown as rows were read copied everything read so far at each doubling, and on every fetch
/// touched fresh pages the allocator had handed back to the system, which together cost more than SQLite reading
/// the rows. Segments small enough to come from the allocator's heap are reused from one fetch to the next, and an
/// object kept after its fetch keeps its own segment alive, not the whole fetch's rows.
struct FetchedRows {
    let entity: String
    let layout: SnapshotLayout
    /// How many rows each segment holds.
    let rowsPerSegment: Int
    /// The rows read, but for those of the segment being filled until ``finish()``.
    private(set) var segments: [SnapshotRows] = []
    private(set) var count = 0
    /// The segment being filled.
    private var building: PackedRowsBuilder?

    /// About the most values a segment holds (a value takes 9 bytes, short text its own besides): well under the
    /// allocator's threshold for mapping memory of its own.
    static let valuesPerSegment = 4_096
    /// The rows the first segment has room for at first: it grows as it fills, so that a fetch of a few rows keeps
    /// no room for hundreds.
    static let firstRows = 16

    init(entity: String, layout: SnapshotLayout) {
        self.entity = entity
        self.layout = layout
        rowsPerSegment = max(1, Self.valuesPerSegment / max(1, layout.properties.count))
    }

    func id(at row: Int) -> ManagedObjectID {
        let (segment, offset) = row.quotientAndRemainder(dividingBy: rowsPerSegment)
        return ManagedObjectID(entityName: entity, words: segments[segment].idWords(at: offset))
    }

    func snapshot(at row: Int) -> ObjectSnapshot {
        let (segment, offset) = row.quotientAndRemainder(dividingBy: rowsPerSegment)
        return ObjectSnapshot(rows: segments[segment], start: offset * layout.properties.count)
    }

    /// Hands each row to `body` in the order read: its id, its segment and where its values start there (for
    /// ``ObjectSnapshot/init(rows:start:)``), without dividing by the segments' size for each.
    func forEachRow(_ body: (ManagedObjectID, SnapshotRows, Int) throws -> Void) rethrows {
        let width = layout.properties.count
        for rows in segments {
            for offset in 0..<rows.rowCount {
                try body(ManagedObjectID(entityName: entity, words: rows.idWords(at: offset)), rows, offset * width)
            }
        }
    }

    /// Appends a row: its values, appended to the segment `append` is handed (``layout``'s count of them), and its
    /// id's words.
    mutating func append(
        id: (UInt64, UInt64), values append: (inout PackedRowsBuilder) throws(RecordStoreError) -> Void
    ) throws(RecordStoreError) {
        var builder =
            building.take()
            ?? PackedRowsBuilder(layout: layout, rows: segments.isEmpty ? Self.firstRows : rowsPerSegment)
        try append(&builder)
        builder.endRow(id: id)
        count += 1
        if builder.rowsWritten == rowsPerSegment {
            segments.append(builder.seal())
        } else {
            building = builder
        }
    }

    /// Ends reading: the last segment's rows join the others.
    mutating func finish() {
        if let builder = building.take() { segments.append(builder.seal()) }
    }
}

/// The properties of an entity's snapshots, in their order: its attributes as the model lists them, then the to-ones
/// its table stores as registers.
final class SnapshotLayout: Sendable, Hashable {
    let properties: [String]
    let index: [String: Int]

    init(_ properties: [String]) {
        self.properties = properties
        self.index = Dictionary(properties.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }

    static let empty = SnapshotLayout([])

    /// Where `property` is in ``properties``: its names compared in turn while there are few, as
    /// ``EntityDescription/attribute(named:)`` does, else looked up by hash.
    func position(of property: String) -> Int? {
        guard properties.count <= EntityDescription.namesComparedInTurn else { return index[property] }
        return properties.firstIndex(of: property)
    }

    static func == (lhs: SnapshotLayout, rhs: SnapshotLayout) -> Bool {
        lhs === rhs || lhs.properties == rhs.properties
    }

    func hash(into hasher: inout Hasher) { hasher.combine(properties) }
}

extension StoreAccess {
    /// Whether `id` is a live object.
    func isLive(_ id: ManagedObjectID) throws -> Bool {
        let table = try schema.table(id.entityName)
        let statement = try db.cachedStatement(sql: "SELECT _live FROM \(table.name) WHERE id = ?")
        return try Int64.fetchOne(statement, arguments: [id.uuid.data]) == 1
    }

    /// The snapshot of `id` if it is live.
    func snapshot(_ id: ManagedObjectID) throws -> ObjectSnapshot? {
        let table = try schema.table(id.entityName)
        let statement = try db.cachedStatement(
            sql: "SELECT \(table.snapshotColumns) FROM \(table.name) WHERE id = ? AND _live = 1")
        guard let row = try Row.fetchOne(statement, arguments: [id.uuid.data]) else { return nil }
        return try table.snapshot(from: row, external: external)
    }

    /// The live objects of `entity` with their snapshots, in the order of their ids' bytes; only those meeting
    /// `filter` when there is one.
    func liveSnapshots(of entity: String, where filter: PredicateSQL? = nil) throws -> FetchedRows {
        let table = try schema.table(entity)
        let condition = filter.map { " AND \($0.condition)" } ?? ""
        let statement = try db.cachedStatement(
            sql: "SELECT id, \(table.fetchColumns) FROM \(table.name) WHERE _live = 1\(condition)")
        let stampsStatement = try db.cachedStatement(sql: "SELECT _stamps FROM \(table.name) WHERE id = ?")
        // The rows' ids and values, in segments the snapshots share.
        var fetched = FetchedRows(entity: entity, layout: table.layout)
        let external = external
        try statement.forEachRow { bindings in
            for argument in filter?.arguments ?? [] { bindings.bind(argument) }
        } _: { row in
            guard let words = row.idWords(at: 0) else {
                throw RecordStoreError(.storeFailed, "a row of \(entity) has an id that is not 16 bytes")
            }
            try fetched.append(id: words) { values throws(RecordStoreError) in
                try table.appendValues(from: row, offset: 1, external: external, to: &values) {
                    () throws(RecordStoreError) -> Data in
                    do {
                        let id = ManagedObjectID(entityName: entity, words: words)
                        return try Data.fetchOne(stampsStatement, arguments: [id.uuid.data]) ?? Data()
                    } catch {
                        let id = ManagedObjectID(entityName: entity, words: words)
                        throw RecordStoreError(.storeFailed, "the stamps of \(id) cannot be read", underlying: error)
                    }
                }
            }
        }
        fetched.finish()
        return fetched
    }

    /// The number of live objects of `entity`.
    func liveCount(of entity: String) throws -> Int {
        let table = try schema.table(entity)
        return try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM \(table.name) WHERE _live = 1")) ?? 0
    }

    /// The live objects `relationship` of `id` points at, as an app reads them.
    func targets(of id: ManagedObjectID, _ relationship: String) throws -> Set<ManagedObjectID> {
        guard let storage = model.storage(ofRelationship: relationship, in: id.entityName),
            let description = model.entitiesByName[id.entityName]?.relationshipsByName[relationship]
        else { return [] }
        let destination = try schema.table(description.destinationEntityName)
        switch storage {
        case .register:
            guard let snapshot = try snapshot(id), case .object(let target) = snapshot[relationship] ?? .null,
                try isLive(target)
            else { return [] }
            return [target]
        case .links:
            let sql = """
                SELECT l.target FROM \(StoreSchema.linkTable(id.entityName, relationship)) l
                JOIN \(destination.name) d ON d.id = l.target
                WHERE l.source = ? AND l.present = 1 AND d._live = 1
                """
            return Set(
                try Data.fetchAll(db.cachedStatement(sql: sql), arguments: [id.uuid.data]).map {
                    ManagedObjectID(entityName: destination.entity.name, uuid: UUID($0))
                })
        case .inverse(let entity, let inverse):
            let pointing = try objects(pointingAt: id, from: entity, through: inverse)
            return description.isToMany ? Set(pointing) : pointing.first.map { [$0] } ?? []
        }
    }

    /// The live objects of `entity` whose stored `relationship` points at `id`, the latest link first.
    private func objects(pointingAt id: ManagedObjectID, from entity: String, through relationship: String) throws
        -> [ManagedObjectID]
    {
        let table = try schema.table(entity)
        var pointing: [(Stamp, ManagedObjectID)] = []
        switch model.storage(ofRelationship: relationship, in: entity) {
        case .register:
            let sql =
                "SELECT id, \(table.recordColumns) FROM \(table.name) WHERE \"r_\(relationship)\" = ? AND _live = 1"
            for row in try Row.fetchAll(db.cachedStatement(sql: sql), arguments: [id.uuid.data]) {
                let record = try table.record(from: row, offset: 1, external: external)
                guard let register = record.values[relationship], register.value == .object(id) else { continue }
                pointing.append((register.stamp, ManagedObjectID(entityName: entity, uuid: UUID(row[0] as Data))))
            }
        case .links:
            let sql = """
                SELECT l.source, l.ltime, l.ldevice FROM \(StoreSchema.linkTable(entity, relationship)) l
                JOIN \(table.name) s ON s.id = l.source
                WHERE l.target = ? AND l.present = 1 AND s._live = 1
                """
            for row in try Row.fetchAll(db.cachedStatement(sql: sql), arguments: [id.uuid.data]) {
                pointing.append(
                    (Stamp(row: row, at: 1), ManagedObjectID(entityName: entity, uuid: UUID(row[0] as Data))))
            }
        case .inverse, nil: break
        }
        return pointing.sorted { $0.0 > $1.0 }.map(\.1)
    }
}

// MARK: - The store's bookkeeping

extension StoreAccess {
    func meta(_ key: String) throws -> DatabaseValue? {
        try DatabaseValue.fetchOne(
            db.cachedStatement(sql: "SELECT value FROM rs_meta WHERE key = ?"), arguments: [key])
    }

    func setMeta(_ key: String, _ value: some DatabaseValueConvertible) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO rs_meta (key, value) VALUES (?, ?)").execute(arguments: [
            key, value,
        ])
    }

    func integerMeta(_ key: String) throws -> Int64 { try meta(key).flatMap(Int64.fromDatabaseValue) ?? 0 }

    /// The device this store saves as.
    func replica() throws -> UUID {
        guard let data = try meta("replica").flatMap(Data.fromDatabaseValue), data.count == 16 else {
            throw RecordStoreError(.storeFailed, "the store's database has no replica id")
        }
        return UUID(data)
    }

    /// Saves `changes` as the store's next log: stamps them, applies them, and (`keepingLog`, for a store whose saves
    /// go to a container) keeps the log in the outbox, all in this transaction, so that the store and its logs agree
    /// after a crash at any moment. The outbox forgets the logs up to `forgettingUpTo`, written to the container
    /// and made durable since (``RecordDatabase/durableSequence``): in this transaction rather than one of their own, which would
    /// cost a flush.
    /// - Returns: The log and what the save changed as an app sees it; `nil` when `changes` is empty.
    mutating func save(
        _ changes: [ObjectChange], physicalMilliseconds: UInt64, keepingLog: Bool = true, forgettingUpTo: UInt64 = 0
    ) throws -> (TransactionLog, MergeChanges)? {
        guard !changes.isEmpty else { return nil }
        if forgettingUpTo > 0 {
            try db.cachedStatement(sql: "DELETE FROM rs_outbox WHERE sequence <= ?").execute(arguments: [
                Int64(forgettingUpTo)
            ])
        }
        var clock = HybridLogicalClock(latest: UInt64(bitPattern: try integerMeta("clock")))
        let time = clock.tick(physicalMilliseconds: physicalMilliseconds)
        let sequence = UInt64(try integerMeta("sequence")) + 1
        let log = TransactionLog(
            device: try replica(), sequence: sequence, time: time, modelVersion: model.version,
            changes: changes.indices.dropFirst().allSatisfy { changes[$0 - 1].id < changes[$0].id }
                ? changes : changes.sorted { $0.id < $1.id })
        // The context checked each value as it was set.
        let merged = try apply(log, model: model, checked: true)
        if keepingLog {
            let bytes = Data(log.encoded())
            try db.cachedStatement(sql: "INSERT INTO rs_outbox (sequence, log) VALUES (?, ?)").execute(arguments: [
                Int64(sequence), bytes,
            ])
            keptLog = RecordDatabase.KeptLog(sequence: sequence, bytes: bytes)
        }
        try setMeta("clock", Int64(bitPattern: time))
        try setMeta("sequence", Int64(sequence))
        return (log, merged)
    }

    /// Whether the log `sequence` of `device` was applied already.
    func hasApplied(device: UUID, sequence: UInt64) throws -> Bool {
        try Int64.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT 1 FROM rs_applied WHERE device = ?1 AND sequence = ?2
                    UNION ALL SELECT 1 FROM rs_floor WHERE device = ?1 AND sequence >= ?2
                    """),
            arguments: [device.data, Int64(bitPattern: sequence)]) != nil
    }

    /// Applies another device's log once: a log applied before, or this store's own, changes nothing; a log of a
    /// newer model is kept, to be applied once the app upgrades.
    /// - Returns: What the log changed as an app sees it; `nil` when it was not applied now.
    /// - Throws: ``RecordStoreError/Code/corruptLog`` for a log naming what the model lacks; nothing is applied.
    mutating func importLog(_ log: TransactionLog, bytes: [UInt8]) throws -> MergeChanges? {
        guard log.device != (try replica()), !(try hasApplied(device: log.device, sequence: log.sequence)) else {
            return nil
        }
        guard log.modelVersion <= model.version else {
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO rs_pending (device, sequence, version, log) VALUES (?, ?, ?, ?)"
            ).execute(arguments: [
                log.device.data, Int64(bitPattern: log.sequence), log.modelVersion, Data(bytes),
            ])
            return nil
        }
        var merged: MergeChanges?
        try db.inSavepoint {
            merged = try apply(log, model: model)
            return .commit
        }
        try db.cachedStatement(sql: "INSERT INTO rs_applied (device, sequence) VALUES (?, ?)").execute(arguments: [
            log.device.data, Int64(bitPattern: log.sequence),
        ])
        try db.cachedStatement(sql: "DELETE FROM rs_pending WHERE device = ? AND sequence = ?").execute(arguments: [
            log.device.data, Int64(bitPattern: log.sequence),
        ])
        var clock = HybridLogicalClock(latest: UInt64(bitPattern: try integerMeta("clock")))
        clock.observe(log.time)
        try setMeta("clock", Int64(bitPattern: clock.latest))
        return merged
    }

    /// The kept logs of newer models that this model can now apply.
    func pendingLogs() throws -> [[UInt8]] {
        try Data.fetchAll(
            db.cachedStatement(sql: "SELECT log FROM rs_pending WHERE version <= ? ORDER BY device, sequence"),
            arguments: [model.version]
        ).map { Array($0) }
    }
}

// MARK: - The whole store

extension StoreAccess {
    /// Every record and link of the store, with their stamps.
    func replicaState() throws -> ReplicaState {
        var state = ReplicaState()
        for entity in model.entities {
            let table = try schema.table(entity.name)
            let rows = try Row.fetchCursor(db, sql: "SELECT id, \(table.recordColumns) FROM \(table.name)")
            while let row = try rows.next() {
                let id = ManagedObjectID(entityName: entity.name, uuid: UUID(row[0] as Data))
                state.objects[id] = try table.record(from: row, offset: 1, external: external)
            }
            for relationship in table.linkRelationships {
                guard let description = entity.relationshipsByName[relationship] else { continue }
                let links = try Row.fetchCursor(
                    db,
                    sql: "SELECT source, target, present, ltime, ldevice FROM "
                        + StoreSchema.linkTable(entity.name, relationship))
                while let row = try links.next() {
                    let key = LinkKey(
                        source: ManagedObjectID(entityName: entity.name, uuid: UUID(row[0] as Data)),
                        relationship: relationship,
                        target: ManagedObjectID(
                            entityName: description.destinationEntityName, uuid: UUID(row[1] as Data)))
                    state.links[key] = Register(row[2] as Int64 != 0, stamp: Stamp(row: row, at: 3))
                }
            }
        }
        return state
    }
}
