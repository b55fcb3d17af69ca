import DocumentKit
import Foundation
import Synchronization
import UbiquityKit

/// A scratch pad of objects read from a store and changed in memory until ``save()``, as Core Data's
/// `NSManagedObjectContext`.
///
/// A context belongs to a queue: the main queue (`.mainQueue`, for the objects an interface shows) or a private
/// one of its own (`.privateQueue`, for work in the background). Use it and its objects inside
/// ``perform(_:)`` or ``performAndWait(_:)``; every call also takes the context's lock, so a slip costs a wait,
/// never a torn object (but a main-queue context with an undo manager must be used on the main thread, where undo
/// lives).
///
/// ```swift
/// let context = ManagedObjectContext(concurrencyType: .mainQueue)
/// context.persistentStoreCoordinator = coordinator
/// let item = Item(context: context)
/// item.title = "Milk"
/// try context.save()
/// ```
public final class ManagedObjectContext: @unchecked Sendable {
    /// Which queue a context's work runs on.
    public enum ConcurrencyType: Sendable, Hashable {
        /// The main queue: for the objects an interface shows.
        case mainQueue
        /// A private queue the context makes for itself.
        case privateQueue
    }

    /// The context's queue.
    public let concurrencyType: ConcurrencyType
    /// A name for the context, shown in descriptions.
    public var name: String? {
        get { locked { storedName } }
        set { locked { storedName = newValue } }
    }
    /// The coordinator whose store the context reads and saves to.
    public var persistentStoreCoordinator: PersistentStoreCoordinator? {
        get { locked { coordinator } }
        set { locked { coordinator = newValue } }
    }
    /// How ``save()`` settles properties this context changed that the store changed too since they were read;
    /// ``MergePolicy/error`` (the default) throws them as a merge conflict.
    public var mergePolicy: MergePolicy {
        get { locked { storedMergePolicy } }
        set { locked { storedMergePolicy = newValue } }
    }
    /// Records every change as an undoable step, when set (only for a main-queue context: DocumentKit's undo
    /// manager lives on the main actor).
    public var undoManager: UndoManager? {
        get { locked { storedUndoManager } }
        set {
            precondition(
                newValue == nil || concurrencyType == .mainQueue, "an undo manager needs a main-queue context")
            locked { storedUndoManager = newValue }
        }
    }

    private let lock = NSRecursiveLock()
    let queue: DispatchQueue
    private static let queueKey = DispatchSpecificKey<ObjectIdentifier>()

    private var storedName: String?
    private var coordinator: PersistentStoreCoordinator?
    private var storedMergePolicy = MergePolicy.error
    var storedUndoManager: UndoManager?
    /// Every object the context knows, by id.
    var registered = ObjectRegistry()
    /// Objects inserted, deleted or changed since the last save.
    var pending = PendingObjects()
    let saves = EventBroadcast<ObjectIDChanges>()
    /// Told after each save, merge, rollback, reset and processPendingChanges (fetched results controllers).
    private var changeObservers: [UUID: (ObjectIDChanges) -> Void] = [:]
    private var madeLink: Link?
    /// What the context's objects hold to reach it.
    var link: Link {
        if let madeLink { return madeLink }
        let link = Link(self)
        madeLink = link
        return link
    }

    /// A context's objects' way to it, which tells them when it is gone.
    ///
    /// The reference is unowned, not weak: a weak reference moves the context's reference counts to a side table,
    /// which slowed every retain of it, and each access of an object retains its context. The context marks the
    /// link ended as it goes, before anything can read it again; an object read on another queue while its
    /// context is released there traps instead of reading freed memory.
    final class Link: Sendable {
        private unowned let target: ManagedObjectContext
        private let live = Atomic(true)

        init(_ context: ManagedObjectContext) { self.target = context }

        /// The context; `nil` once it is gone.
        var context: ManagedObjectContext? { live.load(ordering: .acquiring) ? target : nil }

        fileprivate func end() { live.store(false, ordering: .releasing) }
    }

    deinit { madeLink?.end() }

    /// Makes a context for `concurrencyType`'s queue.
    public init(concurrencyType: ConcurrencyType) {
        self.concurrencyType = concurrencyType
        switch concurrencyType {
        case .mainQueue: queue = .main
        case .privateQueue:
            queue = DispatchQueue(label: "RecordStore.ManagedObjectContext")
        }
        if concurrencyType == .privateQueue { queue.setSpecific(key: Self.queueKey, value: ObjectIdentifier(self)) }
    }

    // MARK: - Queues

    /// Runs `block` on the context's queue, later.
    public func perform(_ block: @escaping () -> Void) {
        // The block runs on the context's queue, where its objects belong.
        nonisolated(unsafe) let block = block
        queue.async { block() }
    }

    /// Runs `block` on the context's queue and waits for it (at once when already on that queue).
    public func performAndWait<T>(_ block: () throws -> T) rethrows -> T {
        if isOnQueue { return try block() }
        return try queue.sync(execute: block)
    }

    /// Runs `block` on the context's queue and returns what it returns.
    public func perform<T: Sendable>(schedule: ScheduledTaskType = .immediate, _ block: @escaping () throws -> T)
        async throws -> T
    {
        if schedule == .immediate, isOnQueue { return try block() }
        nonisolated(unsafe) let block = block
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try block() }) }
        }
    }

    /// When ``perform(schedule:_:)`` runs its block.
    public enum ScheduledTaskType: Sendable, Hashable {
        /// At once when already on the context's queue, else as soon as the queue is free.
        case immediate
        /// Always after what the queue has already been asked to do.
        case enqueued
    }

    private var isOnQueue: Bool {
        switch concurrencyType {
        case .mainQueue: Thread.isMainThread || DispatchQueue.getSpecific(key: Self.mainQueueKey) == true
        case .privateQueue: DispatchQueue.getSpecific(key: Self.queueKey) == ObjectIdentifier(self)
        }
    }

    /// Marks the main queue, which is not always drained by the main thread: a process that called `dispatchMain()`
    /// (a test runner, a server) has Dispatch's worker threads run it, where a `sync` onto it would deadlock.
    private static let mainQueueKey: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    /// Runs `body` under the context's lock.
    func locked<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    // MARK: - Change observers

    /// Calls `observer` after each save, merge, rollback, reset and processPendingChanges, on the calling thread.
    func addChangeObserver(_ observer: @escaping (ObjectIDChanges) -> Void) -> UUID {
        let id = UUID()
        locked { changeObservers[id] = observer }
        return id
    }

    func removeChangeObserver(_ id: UUID) {
        locked { changeObservers[id] = nil }
    }

    /// Tells the change observers, outside the lock.
    func notifyChangeObservers(_ changes: ObjectIDChanges) {
        for observer in locked({ Array(changeObservers.values) }) { observer(changes) }
    }

    // MARK: - The store

    /// The store the context reads and saves; `nil` before one is added.
    var store: PersistentStore? { coordinator?.persistentStores.first }

    /// The model of the context's coordinator.
    var model: ManagedObjectModel? { coordinator?.managedObjectModel }

    func database() throws(RecordStoreError) -> RecordDatabase {
        guard let store else {
            throw RecordStoreError(.storeNotAdded, "the context's coordinator has no store; add one first")
        }
        return store.database
    }

    /// The entity made as `type`.
    func entityDescription(for type: ManagedObject.Type) -> EntityDescription {
        guard let model else { preconditionFailure("the context has no coordinator, so no model") }
        let matching = model.entitiesByClass[ObjectIdentifier(type)] ?? []
        precondition(matching.count == 1, "the model has \(matching.count) entities made as \(type), not one")
        return matching[0]
    }

    static func newObjectID(for entity: EntityDescription) -> ManagedObjectID {
        ManagedObjectID(entityName: entity.name, uuid: .random(), isTemporaryID: !entity.uniquenessKey.isEmpty)
    }

    // MARK: - Objects

    /// The objects inserted since the last save.
    public var insertedObjects: Set<ManagedObject> { locked { Set(pending.filter { $0.state == .inserted }) } }
    /// The objects changed (not inserted or deleted) since the last save.
    public var updatedObjects: Set<ManagedObject> {
        locked { Set(pending.filter { $0.state == .fault && $0.hasPropertyChanges }) }
    }
    /// The objects deleted since the last save.
    public var deletedObjects: Set<ManagedObject> { locked { Set(pending.filter { $0.state == .deleted }) } }
    /// Every object the context knows.
    public var registeredObjects: Set<ManagedObject> { locked { Set(registered.values) } }
    /// Whether anything was inserted, changed or deleted since the last save.
    public var hasChanges: Bool { locked { pending.contains { $0.hasUnsavedChanges } } }

    /// The object with `id`, from the context's objects or as a fault to be read from the store when first used.
    /// An id of an entity the model lacks gives an object with no properties.
    public func object(with id: ManagedObjectID) -> ManagedObject {
        locked { registeredObject(id) }
    }

    /// The object with `id` if it exists: in this context (not deleted) or in the store.
    /// - Throws: ``RecordStoreError/Code/objectNotFound``.
    public func existingObject(with id: ManagedObjectID) throws(RecordStoreError) -> ManagedObject {
        try locked { () throws(RecordStoreError) -> ManagedObject in
            if let object = registered[id] {
                switch object.state {
                case .inserted: return object
                case .deleted, .gone: throw Self.notFound(id)
                case .fault: if object.snapshot != nil { return object }
                }
            }
            guard let entity = model?.entitiesByName[id.entityName],
                let snapshot = try database().read({ try $0.snapshot(id) })
            else { throw Self.notFound(id) }
            let object = registered[id] ?? register(entity: entity, id: id)
            object.snapshot = snapshot
            return object
        }
    }

    static func notFound(_ id: ManagedObjectID) -> RecordStoreError {
        RecordStoreError(.objectNotFound, "no object \(id) in the store", objectID: id)
    }

    /// The registered object with `id`, or a new fault for it.
    func registeredObject(_ id: ManagedObjectID) -> ManagedObject {
        if let object = registered[id] { return object }
        let entity =
            model?.entitiesByName[id.entityName] ?? EntityDescription(name: id.entityName)
        return register(entity: entity, id: id)
    }

    /// The registered object with `id`, of `entity`, or a new fault for it: looked up and registered with one hash
    /// of the id, for a fetch registering thousands.
    func registeredObject(_ id: ManagedObjectID, of entity: EntityDescription) -> ManagedObject {
        registered.object(for: id) { fault(id, of: entity) }
    }

    /// A new fault for `id`, of `entity`, registered without a search of the registry.
    /// - Precondition: no registered object has the id `id`.
    func registeredFault(_ id: ManagedObjectID, of entity: EntityDescription) -> ManagedObject {
        let object = fault(id, of: entity)
        registered.appendUnindexed(object)
        return object
    }

    private func fault(_ id: ManagedObjectID, of entity: EntityDescription) -> ManagedObject {
        let object = entity.managedObjectClass.init(entity: entity, objectID: id)
        object.managedObjectContext = self
        return object
    }

    private func register(entity: EntityDescription, id: ManagedObjectID) -> ManagedObject {
        let object = entity.managedObjectClass.init(entity: entity, objectID: id)
        object.managedObjectContext = self
        registered[id] = object
        return object
    }

    /// Inserts a new object; it is saved with the next ``save()``.
    public func insert(_ object: ManagedObject) {
        insert(object, fresh: false)
    }

    /// Inserts `object`, made with a new random id (``newObjectID(for:)``) that no registered object can have when
    /// `fresh`: registered then without a search of the registry, thousands at a time before a large save.
    func insert(_ object: ManagedObject, fresh: Bool) {
        locked {
            precondition(
                object.managedObjectContext == nil || object.managedObjectContext === self,
                "\(object) belongs to another context")
            if object.state == .deleted, registered[object.objectID] === object {
                object.state = .fault  // inserting a deleted object again undoes the delete
                return
            }
            object.managedObjectContext = self
            object.state = .inserted
            if fresh, object.registryPlace < 0 {
                registered.appendUnindexed(object)
            } else {
                registered[object.objectID] = object
            }
            pending.insert(object)
            registerUndo(object) { context, object in context.undoInsert(object) }
        }
    }

    private func undoInsert(_ object: ManagedObject) {
        guard object.state == .inserted else { return }
        detach(object)
        // Registered while undoing, this is the redo: the object inserted again, with the values it kept.
        registerUndo(object) { context, object in
            object.state = .fault
            context.insert(object)
        }
    }

    /// Forgets an object the context inserted, as if it never was.
    func detach(_ object: ManagedObject) {
        for (key, targets) in object.relationships where !targets.isEmpty { setRelationship([], of: object, key) }
        pending.remove(object)
        if registered[object.objectID] === object { registered[object.objectID] = nil }
        object.state = .gone
    }

    /// Creates an object of the entity named `entityName` in `context` (Core Data's
    /// `NSEntityDescription.insertNewObject(forEntityName:into:)`).
    public static func insertNewObject(forEntityName entityName: String, into context: ManagedObjectContext)
        -> ManagedObject
    {
        guard let entity = context.model?.entitiesByName[entityName] else {
            preconditionFailure("the context's model has no entity named \(entityName)")
        }
        let object = entity.managedObjectClass.init(entity: entity, objectID: newObjectID(for: entity))
        context.insert(object)
        return object
    }

    // MARK: - Properties

    /// Keeps, for the next save to throw, why a value set on `object`'s `key` changed nothing.
    func refuse(_ object: ManagedObject, _ key: String, _ code: RecordStoreError.Code, _ message: String) {
        object.refusedValues.append(
            (key, RecordStoreError(code, message, objectID: object.objectID, property: key)))
        pending.insert(object)
    }

    /// An attribute's value: changed in memory, else as read from the store, else the attribute's default.
    func attributeValue(of object: ManagedObject, _ key: String) -> RecordValue {
        if let value = object.changedValues[key] { return value }
        if let value = fire(object)[key] { return value }
        return object.entity.attribute(named: key)?.defaultValue ?? .null
    }

    /// The value of `attribute`, one of the object's entity's: an inserted object's without a look at the store.
    func value(of object: ManagedObject, _ attribute: AttributeDescription) -> RecordValue {
        if object.state == .inserted { return object.changedValues[attribute.name] ?? attribute.defaultValue }
        return attributeValue(of: object, attribute.name)
    }

    /// The object's snapshot, read from the store the first time; an inserted or vanished object reads its
    /// defaults.
    @discardableResult
    func fire(_ object: ManagedObject) -> ObjectSnapshot {
        if let snapshot = object.snapshot { return snapshot }
        var snapshot = ObjectSnapshot.empty
        if object.state != .inserted, let database = try? database(),
            let stored = try? database.read({ try $0.snapshot(object.objectID) })
        {
            snapshot = stored
        }
        object.snapshot = snapshot
        return snapshot
    }

    /// Sets an attribute in memory; a value of the wrong type is refused, to be reported by the next save.
    func setAttribute(_ value: RecordValue, of object: ManagedObject, _ key: String) {
        let entity = object.entity
        // The description is read where it lies: copying it out for each value set cost a tenth of the setting.
        guard let index = entity.attributeIndex(named: key) else {
            refuse(object, key, .unknownProperty, "\(entity.name) has no attribute \(key)")
            return
        }
        guard value.isNull || entity.attributes[index].type.accepts(value) else {
            refuse(object, key, .typeMismatch, "\(entity.name).\(key) cannot hold \(value)")
            return
        }
        if object.changedValues.isEmpty { object.changedValues.reserveCapacity(entity.attributes.count) }
        let old: RecordValue
        if object.state == .inserted {
            // An inserted object is pending from its insert until the save, and saves all its values whether set or
            // not: the value is kept with one search, even one equal to the default.
            old = object.changedValues.updateValue(value, forKey: key) ?? entity.attributes[index].defaultValue
            guard old != value else { return }
        } else {
            let stored = fire(object)[key] ?? entity.attributes[index].defaultValue
            old = object.changedValues[key] ?? stored
            guard old != value else { return }
            object.changedValues[key] = stored == value ? nil : value
            pending.insert(object)
        }
        // Asked first: the undo's closure, holding the old value, is made only for a context that keeps undo.
        guard storedUndoManager != nil else { return }
        registerUndo(object) { context, object in context.setAttribute(old, of: object, key) }
    }

    /// The objects a relationship points at now, read from the store the first time.
    func relationship(of object: ManagedObject, _ key: String) -> Set<ManagedObject> {
        if let targets = object.relationships[key] { return targets }
        var targets: Set<ManagedObject> = []
        if object.state != .inserted, object.entity.relationshipsByName[key] != nil,
            let database = try? database(),
            let ids = try? database.read({ try $0.targets(of: object.objectID, key) })
        {
            targets = Set(ids.map(registeredObject).filter { $0.state != .gone })
        }
        object.relationships[key] = targets
        object.storedRelationships[key] = targets
        return targets
    }

    /// Sets a relationship in memory and keeps its inverse in step: the objects added point back at `object`,
    /// the objects removed no longer do.
    func setRelationship(_ targets: Set<ManagedObject>, of object: ManagedObject, _ key: String) {
        guard let description = object.entity.relationshipsByName[key] else {
            refuse(object, key, .unknownProperty, "\(object.entity.name) has no relationship \(key)")
            return
        }
        if let foreign = targets.first(where: { $0.managedObjectContext !== self }) {
            refuse(
                object, key, .validationFailed,
                "\(object.entity.name).\(key) cannot point at \(foreign), an object of another context; fetch it in "
                    + "this one by its objectID")
            return
        }
        if let wrong = targets.first(where: { $0.entity.name != description.destinationEntityName }) {
            refuse(object, key, .typeMismatch, "\(object.entity.name).\(key) cannot point at \(wrong)")
            return
        }
        guard description.isToMany || targets.count <= 1 else { return }
        let old = relationship(of: object, key)
        guard old != targets else { return }
        object.relationships[key] = targets
        pending.insert(object)
        registerUndo(object) { context, object in context.setRelationship(old, of: object, key) }
        guard let inverseName = description.inverseName,
            let inverse = model?.entitiesByName[description.destinationEntityName]?.relationshipsByName[inverseName]
        else { return }
        for removed in old.subtracting(targets) {
            var back = relationship(of: removed, inverseName)
            if back.remove(object) != nil { setInverse(back, of: removed, inverseName) }
        }
        for added in targets.subtracting(old) {
            var back = relationship(of: added, inverseName)
            if inverse.isToMany {
                if back.insert(object).inserted { setInverse(back, of: added, inverseName) }
            } else {
                // A to-one inverse leaves the object it pointed at before.
                for previous in back where previous !== object {
                    var others = relationship(of: previous, key)
                    others.remove(added)
                    setInverse(others, of: previous, key)
                }
                back = [object]
                setInverse(back, of: added, inverseName)
            }
        }
    }

    /// Sets the inverse side of a change without following inverses again.
    private func setInverse(_ targets: Set<ManagedObject>, of object: ManagedObject, _ key: String) {
        object.relationships[key] = targets
        pending.insert(object)
    }

    // MARK: - Undo

    /// Registers how to undo a change of `object`, when the context has an undo manager.
    func registerUndo(_ object: ManagedObject, _ undo: @escaping (ManagedObjectContext, ManagedObject) -> Void) {
        guard let undoManager = storedUndoManager else { return }
        // A main-queue context's objects live on the main actor, where undo runs.
        nonisolated(unsafe) let undo = undo
        nonisolated(unsafe) let object = object
        MainActor.assumeIsolated {
            undoManager.registerUndo(withTarget: self) { context in context.locked { undo(context, object) } }
        }
    }

    public var description: String { "<ManagedObjectContext \(storedName ?? "") \(concurrencyType)>" }
}

extension EntityDescription {
    /// Creates an object of the entity named `entityName` in `context`, under the name Core Data gives it
    /// (`NSEntityDescription.insertNewObject(forEntityName:into:)`); the same as
    /// ``ManagedObjectContext/insertNewObject(forEntityName:into:)``.
    public static func insertNewObject(forEntityName entityName: String, into context: ManagedObjectContext)
        -> ManagedObject
    {
        ManagedObjectContext.insertNewObject(forEntityName: entityName, into: context)
    }
}
