import Foundation

/// An object of a record store: an entity's instance, living in one context.
///
/// Subclass it to give an entity typed properties, and name the subclass in the entity's description:
///
/// ```swift
/// final class Item: ManagedObject {
///     @Attribute("title") var title: String
///     @ToMany("tags") var tags: Set<Tag>
/// }
/// let item = Item(context: context)
/// item.title = "Milk"
/// ```
///
/// Every read and write goes through the object's context, under the context's lock. As in Core Data, objects are
/// not `Sendable`: use an object on its context's queue (``ManagedObjectContext/perform(_:)``), and pass its
/// ``objectID`` to other contexts.
open class ManagedObject: Hashable, CustomStringConvertible {
    /// The object's entity.
    public let entity: EntityDescription
    /// The object's identity, the same on every device; temporary until first saved for an entity with a
    /// uniqueness key.
    public internal(set) var objectID: ManagedObjectID
    /// The context the object lives in; `nil` once the context is gone.
    public internal(set) var managedObjectContext: ManagedObjectContext? {
        get { contextLink?.context }
        set { contextLink = newValue?.link }
    }
    /// The way to the context, shared by all its objects: making an object retains the link instead of forming a
    /// weak reference of its own, which cost a tenth of a large fetch.
    private var contextLink: ManagedObjectContext.Link?

    // The state below is the context's, read and written under its lock.

    /// The attributes and stored to-one values as last read from the store; `nil` until read (a fault).
    var snapshot: ObjectSnapshot?
    var state: State = .fault
    /// Where the object is in its context's ``PendingObjects``; -1 when not there.
    var pendingPlace = -1
    /// Where the object is in its context's ``ObjectRegistry``'s order; -1 when not there.
    var registryPlace = -1
    /// What the object holds beyond its snapshot, made when first needed: most objects a fetch makes are only read,
    /// and every field an object has is made with it and released with it, thousands of times in a large fetch.
    private var edits: Edits?

    private final class Edits {
        var changedValues: PropertyMap<RecordValue> = [:]
        var relationships: [String: Set<ManagedObject>] = [:]
        var storedRelationships: [String: Set<ManagedObject>] = [:]
        var refusedValues: [(property: String, error: RecordStoreError)] = []
        weak var keyProbe: KeyProbe?
    }

    private var madeEdits: Edits {
        if let edits { return edits }
        let made = Edits()
        edits = made
        return made
    }

    /// Attributes changed since the last save.
    var changedValues: PropertyMap<RecordValue> {
        get { edits?.changedValues ?? [:] }
        set { if edits != nil || !newValue.isEmpty { madeEdits.changedValues = newValue } }
        _modify { yield &madeEdits.changedValues }
    }
    /// Every relationship read or changed: the objects it points at now.
    var relationships: [String: Set<ManagedObject>] {
        get { edits?.relationships ?? [:] }
        set { if edits != nil || !newValue.isEmpty { madeEdits.relationships = newValue } }
        _modify { yield &madeEdits.relationships }
    }
    /// The same relationships as the store held them when read.
    var storedRelationships: [String: Set<ManagedObject>] {
        get { edits?.storedRelationships ?? [:] }
        set { if edits != nil || !newValue.isEmpty { madeEdits.storedRelationships = newValue } }
        _modify { yield &madeEdits.storedRelationships }
    }
    /// Values set through ``setValue(_:forKey:)`` that could not be kept: the property and what was wrong.
    var refusedValues: [(property: String, error: RecordStoreError)] {
        get { edits?.refusedValues ?? [] }
        set { if edits != nil || !newValue.isEmpty { madeEdits.refusedValues = newValue } }
        _modify { yield &madeEdits.refusedValues }
    }
    /// Set on an object a fetch makes to learn which attribute a key path reads (``KeyProbe``).
    var keyProbe: KeyProbe? {
        get { edits?.keyProbe }
        set {
            madeEdits.keyProbe = newValue
            isKeyProbe = newValue != nil
        }
    }
    /// Whether ``keyProbe`` is set: a plain flag an attribute's read checks without loading the weak reference.
    @usableFromInline private(set) var isKeyProbe = false

    enum State {
        /// Known by id, nothing read yet or read and unchanged.
        case fault
        /// Inserted in its context, not saved yet.
        case inserted
        /// Deleted in its context, not saved yet.
        case deleted
        /// Deleted and saved, or found deleted in the store.
        case gone
    }

    /// Makes an object of `entity` with the id `objectID`; contexts make objects, apps insert them.
    public required init(entity: EntityDescription, objectID: ManagedObjectID) {
        self.entity = entity
        self.objectID = objectID
    }

    /// Inserts a new object of the entity made as this class into `context` (Core Data's `init(context:)`).
    /// - Precondition: the context's model has exactly one entity made as this class.
    public convenience init(context: ManagedObjectContext) {
        let entity = context.entityDescription(for: Self.self)
        self.init(entity: entity, objectID: ManagedObjectContext.newObjectID(for: entity))
        context.insert(self, fresh: true)
    }

    /// Inserts a new object of `entity` into `context`.
    public convenience init(entity: EntityDescription, insertInto context: ManagedObjectContext?) {
        self.init(entity: entity, objectID: ManagedObjectContext.newObjectID(for: entity))
        context?.insert(self, fresh: true)
    }

    /// Whether the object was inserted in its context and not saved yet.
    public var isInserted: Bool { withContext { _ in state == .inserted } ?? false }
    /// Whether the object was deleted in its context and not saved yet.
    public var isDeleted: Bool { withContext { _ in state == .deleted } ?? false }
    /// Whether the object has unsaved changes of its properties, or is inserted or deleted.
    public var hasChanges: Bool { withContext { _ in hasUnsavedChanges } ?? false }
    /// Whether the object was changed (not inserted or deleted) and not saved yet.
    public var isUpdated: Bool { withContext { _ in state == .fault && hasPropertyChanges } ?? false }
    /// Whether nothing of the object has been read from the store yet.
    public var isFault: Bool {
        withContext { _ in state == .fault && snapshot == nil && relationships.isEmpty } ?? true
    }

    var hasPropertyChanges: Bool {
        !changedValues.isEmpty || relationships.contains { storedRelationships[$0.key] != $0.value }
            || !refusedValues.isEmpty
    }

    var hasUnsavedChanges: Bool { state == .inserted || state == .deleted || hasPropertyChanges }

    /// The value of an attribute or relationship: an attribute as its Swift type (`String`, `Int64`, `Date` …),
    /// a to-one as its ``ManagedObject``, a to-many as a `Set` of them; `nil` for no value or an unknown key.
    public func value(forKey key: String) -> Any? {
        guard let context = managedObjectContext else { return nil }
        return context.locked { () -> Any? in
            if let attribute = entity.attributesByName[key] {
                return context.attributeValue(of: self, attribute.name).anyValue(as: attribute.type)
            }
            guard let relationship = entity.relationshipsByName[key] else { return nil }
            let targets = context.relationship(of: self, relationship.name)
            return relationship.isToMany ? targets : targets.first
        }
    }

    /// Sets an attribute or relationship (a to-many from any `Set` or array of objects).
    ///
    /// A key the entity lacks, or a value of the wrong type, changes nothing; the context's next
    /// ``ManagedObjectContext/save()`` throws ``RecordStoreError/Code/unknownProperty`` or
    /// ``RecordStoreError/Code/typeMismatch`` naming the object and the key.
    public func setValue(_ value: Any?, forKey key: String) {
        withContext { (context: ManagedObjectContext) -> Void in
            if let attribute = entity.attributesByName[key] {
                guard let recordValue = RecordValue(any: value, as: attribute.type) else {
                    context.refuse(
                        self, key, .typeMismatch,
                        "\(entity.name).\(key) cannot hold \(value.map { "\(type(of: $0))" } ?? "nil")")
                    return
                }
                context.setAttribute(recordValue, of: self, key)
            } else if let relationship = entity.relationshipsByName[key] {
                guard let targets = ManagedObject.objects(in: value, toMany: relationship.isToMany) else {
                    context.refuse(
                        self, key, .typeMismatch, "\(entity.name).\(key) cannot hold \(String(describing: value))")
                    return
                }
                context.setRelationship(targets, of: self, relationship.name)
            } else {
                context.refuse(
                    self, key, .unknownProperty, "\(entity.name) has no property named \(String(reflecting: key))")
            }
        }
    }

    private static func objects(in value: Any?, toMany: Bool) -> Set<ManagedObject>? {
        switch value {
        case nil: return []
        case let object as ManagedObject: return [object]
        case let objects as Set<ManagedObject> where toMany: return objects
        case let objects as [ManagedObject] where toMany: return Set(objects)
        case let objects as any Collection where toMany:
            let cast = objects.compactMap { $0 as? ManagedObject }
            return cast.count == objects.count ? Set(cast) : nil
        default: return nil
        }
    }

    /// An attribute's value as the store keeps it (a changed value, else the stored one, else the default).
    public func primitiveValue(forKey key: String) -> RecordValue {
        guard !isKeyProbe else { return .null }
        return attributeValue(forKey: key)
    }

    /// What an ``Attribute`` reads: the value of the attribute `key`, `null` without a context.
    @usableFromInline
    func attributeValue(forKey key: String) -> RecordValue {
        withContext { context in context.attributeValue(of: self, key) } ?? .null
    }

    /// What an ``Attribute`` writes.
    @usableFromInline
    func setAttributeValue(_ value: RecordValue, forKey key: String) {
        withContext { context in context.setAttribute(value, of: self, key) }
    }

    /// Tells the ``KeyProbe`` this object serves that the attribute `key` was read through `keyPath`.
    @usableFromInline
    func probeRead(_ key: String, through keyPath: AnyKeyPath) {
        keyProbe?.read(key, through: keyPath)
    }

    /// The attributes changed since the last save, with their new values.
    public func changedValuesForCurrentEvent() -> [String: RecordValue] {
        withContext { _ in Dictionary(uniqueKeysWithValues: changedValues.map { ($0.key, $0.value) }) } ?? [:]
    }

    /// Runs `body` under the context's lock; `nil` when the object has no context.
    func withContext<T>(_ body: (ManagedObjectContext) -> T) -> T? {
        guard let context = managedObjectContext else { return nil }
        return context.locked { body(context) }
    }

    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    open var description: String { "<\(type(of: self)) \(objectID)>" }
}
