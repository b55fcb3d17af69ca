import Foundation

/// A description of the objects to fetch: an entity, a `#Predicate`, sort descriptors, a limit and an offset.
///
/// ```swift
/// var request = FetchRequest<Item>(entityName: "Item")
/// request.predicate = #Predicate<Item> { $0.title.contains("Milk") }
/// request.sortDescriptors = [SortDescriptor(\Item.title)]
/// let items = try context.fetch(request)
/// ```
public struct FetchRequest<Result: ManagedObject>: @unchecked Sendable {
    /// The entity to fetch; `nil` for the entity made as `Result`.
    public var entityName: String?
    /// Which objects to fetch; every object when `nil`. Evaluated on each object with its unsaved changes; comparisons
    /// of integer and Boolean attributes with constants are answered by the store in SQL for objects unchanged in
    /// the context.
    public var predicate: Predicate<Result>?
    /// The order of the results.
    public var sortDescriptors: [SortDescriptor<Result>]
    /// At most this many results; 0 for no limit.
    public var fetchLimit: Int
    /// Results to skip first.
    public var fetchOffset: Int
    /// Whether objects inserted, changed or deleted in the context and not saved count as they are in memory
    /// (`true`, Core Data's default) or as the store holds them.
    public var includesPendingChanges: Bool

    /// A request for every object of `entityName` (or of the entity made as `Result`).
    public init(
        entityName: String? = nil, predicate: Predicate<Result>? = nil, sortDescriptors: [SortDescriptor<Result>] = []
    ) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = 0
        self.fetchOffset = 0
        self.includesPendingChanges = true
    }
}

extension ManagedObjectContext {
    /// The objects `request` describes, as this context sees them.
    /// - Throws: ``RecordStoreError/Code/unknownEntity``, ``RecordStoreError/Code/storeNotAdded``, or what the
    ///   predicate throws.
    // Inlined where `Result` is known, so the results are gathered without looking up generic metadata for each; the
    // rows are read and the objects made by `forEachFetchedObject`.
    @inlinable
    public func fetch<Result: ManagedObject>(_ request: FetchRequest<Result>) throws -> [Result] {
        // What SQLite matched, and what is left for the predicate in memory (every object, without a predicate).
        var matched: [Result] = []
        var unmatched: [Result] = []
        let predicate = request.predicate
        try forEachFetchedObject(
            entityName: request.entityName, resultType: Result.self,
            includesPendingChanges: request.includesPendingChanges,
            translating: predicate.map { predicate in { entity in PredicateSQL(predicate, entity: entity) } },
            reserving: { count in
                if predicate == nil { unmatched.reserveCapacity(count) } else { matched.reserveCapacity(count) }
            }
        ) { object, judged in
            guard let object = object as? Result else { return }
            if judged { unmatched.append(object) } else { matched.append(object) }
        }
        var results = predicate == nil ? unmatched : matched
        if let predicate {
            for object in unmatched where try predicate.evaluate(object) { results.append(object) }
        }
        if !request.sortDescriptors.isEmpty { results.sort(using: request.sortDescriptors) }
        if request.fetchOffset > 0 { results = Array(results.dropFirst(request.fetchOffset)) }
        if request.fetchLimit > 0 { results = Array(results.prefix(request.fetchLimit)) }
        return results
    }

    /// Reads the objects of a fetch and hands each to `body`, under the context's lock: with `judged` `false` when
    /// the store matched it (SQLite answered the predicate, translated by `translating`), `true` when the predicate
    /// is still to be evaluated on it in memory (there is none to translate, or it is beyond SQL, or the object has
    /// changes here the store does not hold).
    @usableFromInline
    func forEachFetchedObject(
        entityName: String?, resultType: ManagedObject.Type, includesPendingChanges: Bool,
        translating: ((EntityDescription) -> PredicateSQL?)?, reserving: (Int) -> Void,
        _ body: (ManagedObject, _ judged: Bool) -> Void
    ) throws {
        try locked { () throws -> Void in
            let entity = try entity(named: entityName, madeAs: resultType)
            // SQLite filters what it can answer as Swift would; objects changed here and not saved are judged in
            // memory below, whatever the store holds for them.
            let filter = translating.flatMap { $0(entity) }
            let hasPredicate = translating != nil
            let database = try database()
            // The store's objects, told apart from inserted and changed ones only when some are pending.
            let changedHere =
                includesPendingChanges
                && pending.contains { $0.state == .inserted || (filter != nil && $0.entity === entity) }
            var seen: Set<ManagedObjectID> = []
            let fetched = try database.read { try $0.liveSnapshots(of: entity.name, where: filter) }
            // A context that knows no objects yet registers the fetch's (distinct) objects without looking them up.
            let fresh = registered.count == 0
            registered.reserveCapacity(registered.count + fetched.count, indexing: !fresh)
            reserving(fetched.count)
            fetched.forEachRow { id, rows, start in
                // Registered with one hash of its id, or none.
                let object = fresh ? registeredFault(id, of: entity) : registeredObject(id, of: entity)
                if object.snapshot == nil { object.snapshot = ObjectSnapshot(rows: rows, start: start) }
                if changedHere { seen.insert(id) }
                if includesPendingChanges, object.state == .deleted || object.state == .gone { return }
                body(object, filter == nil || (changedHere && object.hasPropertyChanges))
            }
            if changedHere {
                for object in pending where object.entity === entity && !seen.contains(object.objectID) {
                    let judged = object.state == .inserted || (hasPredicate && object.state == .fault)
                    if judged, object.hasPropertyChanges || object.state == .inserted { body(object, true) }
                }
            }
        }
    }

    /// How many objects `request` would fetch.
    public func count<Result: ManagedObject>(for request: FetchRequest<Result>) throws -> Int {
        let simple = try locked { () throws -> Int? in
            guard request.predicate == nil, request.fetchOffset == 0, request.fetchLimit == 0,
                !request.includesPendingChanges || pending.isEmpty
            else { return nil }
            let entity = try entity(named: request.entityName, madeAs: Result.self)
            return try database().read { try $0.liveCount(of: entity.name) }
        }
        if let simple { return simple }
        var unlimited = request
        unlimited.sortDescriptors = []
        return try fetch(unlimited).count
    }

    /// The entity named `name`, or without a name the one entity made as `type`.
    private func entity(named name: String?, madeAs type: ManagedObject.Type) throws(RecordStoreError)
        -> EntityDescription
    {
        guard let model else { throw RecordStoreError(.storeNotAdded, "the context has no coordinator") }
        if let name { return try model.entity(named: name) }
        let matching = model.entities.filter { $0.managedObjectClass == type }
        guard matching.count == 1 else {
            throw RecordStoreError(
                .unknownEntity, "the model has \(matching.count) entities made as \(type); name the entity")
        }
        return matching[0]
    }
}
