import Foundation

/// Why a record store operation failed.
///
/// Validation failures name the object and the property; a merge failure lists each conflict in ``conflicts``.
///
/// ```swift
/// do { try context.save() } catch let error as RecordStoreError where error.code == .mergeConflict {
///     for conflict in error.conflicts { print(conflict.objectID, conflict.property) }
/// }
/// ```
public struct RecordStoreError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case invalidModel, unknownEntity, unknownProperty, typeMismatch, validationFailed, mergeConflict,
                uniquenessConflict, deleteDenied, objectNotFound, corruptLog, newerModel, storeNotAdded,
                storeFailed
        }
        private let base: Base
        /// The model contradicts itself: a duplicate name, a relationship to an entity that is not in the model,
        /// inverses that do not name each other, a uniqueness key naming no attribute.
        public static let invalidModel = Code(base: .invalidModel)
        /// An entity name the model does not have.
        public static let unknownEntity = Code(base: .unknownEntity)
        /// A property name the entity does not have.
        public static let unknownProperty = Code(base: .unknownProperty)
        /// A value of the wrong type for its property, such as text for an integer or 70,000 for a 16-bit integer.
        public static let typeMismatch = Code(base: .typeMismatch)
        /// An object breaks a rule of its model: a required property is empty, or a to-one holds an object of
        /// another entity.
        public static let validationFailed = Code(base: .validationFailed)
        /// A save met changes stored since the context read the objects, and the merge policy refused to merge.
        public static let mergeConflict = Code(base: .mergeConflict)
        /// Two objects of one entity have the same uniqueness key, and the merge policy refused to merge them.
        public static let uniquenessConflict = Code(base: .uniquenessConflict)
        /// A delete refused by a relationship whose delete rule is deny.
        public static let deleteDenied = Code(base: .deleteDenied)
        /// No object has the id, or it was deleted.
        public static let objectNotFound = Code(base: .objectNotFound)
        /// A transaction log or baseline could not be read: truncated, altered, or naming what its model lacks.
        public static let corruptLog = Code(base: .corruptLog)
        /// A log written by a newer model than the app's; it is kept and applied after the app upgrades.
        public static let newerModel = Code(base: .newerModel)
        /// The context's coordinator has no store yet.
        public static let storeNotAdded = Code(base: .storeNotAdded)
        /// The store's database or log folder could not be read or written.
        public static let storeFailed = Code(base: .storeFailed)
        /// The code's stable name, such as `mergeConflict`.
        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public var code: Code
    /// What happened, naming the entity, object and property where there are some.
    public var message: String
    /// For ``Code/validationFailed`` and ``Code/typeMismatch``: the object at fault, if it has an id.
    public var objectID: ManagedObjectID?
    /// For ``Code/validationFailed``, ``Code/typeMismatch`` and ``Code/unknownProperty``: the property at fault.
    public var property: String?
    /// For ``Code/mergeConflict``: each property changed both in memory and in the store.
    public var conflicts: [MergeConflict]
    /// The error underneath, if any (a database or file error).
    public var underlying: (any Error)?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, objectID: ManagedObjectID? = nil, property: String? = nil,
        conflicts: [MergeConflict] = [], underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.objectID = objectID
        self.property = property
        self.conflicts = conflicts
        self.underlying = underlying
    }

    /// `RecordStoreError.<code>: <message>`, with the underlying error when there is one.
    public var description: String {
        if let underlying { return "RecordStoreError.\(code): \(message) (\(underlying))" }
        return "RecordStoreError.\(code): \(message)"
    }

    /// The same as ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }
}

/// One property that a context changed while the store's copy changed too.
public struct MergeConflict: Sendable, Hashable, CustomStringConvertible {
    /// The object.
    public var objectID: ManagedObjectID
    /// The property changed on both sides.
    public var property: String
    /// The value the context holds, unsaved.
    public var objectValue: RecordValue
    /// The value the context read from the store, before either change.
    public var cachedValue: RecordValue
    /// The value in the store now: what an import or another context saved meanwhile.
    public var persistedValue: RecordValue

    /// Creates a conflict.
    public init(
        objectID: ManagedObjectID, property: String, objectValue: RecordValue, cachedValue: RecordValue,
        persistedValue: RecordValue
    ) {
        self.objectID = objectID
        self.property = property
        self.objectValue = objectValue
        self.cachedValue = cachedValue
        self.persistedValue = persistedValue
    }

    public var description: String {
        "\(objectID).\(property): in memory \(objectValue), read \(cachedValue), stored \(persistedValue)"
    }
}
