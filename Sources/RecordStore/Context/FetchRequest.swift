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
    public func fetch<Result: ManagedObject>(_ request: FetchRequest<Result>) throws -> [Result] {
        let (matched, unmatched) = try locked { () throws -> ([Result], [Result]) in
            let entity = try entity(of: request)
            // SQLite filters what it can answer as Swift would; objects changed here and not saved are judged in
            // memory below, whatever the store holds for them.
            let filter = request.predicate.flatMap { PredicateSQL($0, entity: entity) }
            let database = try database()
            var matched: [Result] = []
            var unmatched: [Result] = []
            // The store's objects, told apart from inserted and changed ones only when some are pending.
            let changedHere =
                request.includesPendingChanges
                && pending.contains { $0.state == .inserted || (filter != nil && $0.entity === entity) }
            var seen: Set<ManagedObjectID> = []
            let snapshots = try database.read { try $0.liveSnapshots(of: entity.name, where: filter) }
            registered.reserveCapacity(registered.count + snapshots.count)
            if filter == nil {
                unmatched.reserveCapacity(snapshots.count)
            } else {
                matched.reserveCapacity(snapshots.count)
            }
            for (id, snapshot) in snapshots {
                let object = registeredObject(id, of: entity)
                if object.snapshot == nil { object.snapshot = snapshot }
                if changedHere { seen.insert(id) }
                if request.includesPendingChanges, object.state == .deleted || object.state == .gone { continue }
                guard let object = object as? Result else { continue }
                if filter == nil || (changedHere && object.hasPropertyChanges) {
                    unmatched.append(object)
                } else {
                    matched.append(object)
                }
            }
            if changedHere {
                for object in pending where object.entity === entity && !seen.contains(object.objectID) {
                    let judged = object.state == .inserted || (filter != nil && object.state == .fault)
                    if judged, object.hasPropertyChanges || object.state == .inserted, let object = object as? Result {
                        unmatched.append(object)
                    }
                }
            }
            return (matched, unmatched)
        }
        // Without a predicate every object is in `unmatched`.
        var results = request.predicate == nil ? unmatched : matched
        if let predicate = request.predicate {
            for object in unmatched where try predicate.evaluate(object) { results.append(object) }
        }
        if !request.sortDescriptors.isEmpty { results.sort(using: request.sortDescriptors) }
        if request.fetchOffset > 0 { results = Array(results.dropFirst(request.fetchOffset)) }
        if request.fetchLimit > 0 { results = Array(results.prefix(request.fetchLimit)) }
        return results
    }

    /// How many objects `request` would fetch.
    public func count<Result: ManagedObject>(for request: FetchRequest<Result>) throws -> Int {
        let simple = try locked { () throws -> Int? in
            guard request.predicate == nil, request.fetchOffset == 0, request.fetchLimit == 0,
                !request.includesPendingChanges || pending.isEmpty
            else { return nil }
            let entity = try entity(of: request)
            return try database().read { try $0.liveCount(of: entity.name) }
        }
        if let simple { return simple }
        var unlimited = request
        unlimited.sortDescriptors = []
        return try fetch(unlimited).count
    }

    private func entity<Result: ManagedObject>(of request: FetchRequest<Result>) throws(RecordStoreError)
        -> EntityDescription
    {
        guard let model else { throw RecordStoreError(.storeNotAdded, "the context has no coordinator") }
        if let name = request.entityName { return try model.entity(named: name) }
        let matching = model.entities.filter { $0.managedObjectClass == Result.self }
        guard matching.count == 1 else {
            throw RecordStoreError(
                .unknownEntity, "the model has \(matching.count) entities made as \(Result.self); name the entity")
        }
        return matching[0]
    }
}
