import Foundation

/// How a save settles the properties a context changed that the store changed too since the context read them
/// (an import from another device, or another context's save), as Core Data's `NSMergePolicy`.
///
/// ```swift
/// context.mergePolicy = .mergeByPropertyObjectTrump
/// // or decide each conflict:
/// context.mergePolicy = MergePolicy { conflicts in
///     Dictionary(uniqueKeysWithValues: conflicts.map { ($0, .keepStoredValue) })
/// }
/// ```
open class MergePolicy: @unchecked Sendable {
    /// Core Data's policies.
    public enum MergeType: Sendable, Hashable {
        /// The save throws ``RecordStoreError/Code/mergeConflict`` listing each conflict; nothing is saved.
        case error
        /// For each conflicting property the store's value stays; the context's other changes are saved.
        case mergeByPropertyStoreTrump
        /// For each conflicting property the context's value is saved; the store's other changes stay.
        case mergeByPropertyObjectTrump
        /// Every attribute of a conflicting object is saved as the context holds it.
        case overwrite
        /// A conflicting object's changes are dropped; it takes the store's values.
        case rollback
    }

    /// What to do with one conflicting property.
    public enum Resolution: Sendable, Hashable {
        /// Save the context's value.
        case keepObjectValue
        /// Keep the store's value and drop the context's change.
        case keepStoredValue
        /// Save this value instead of either.
        case set(RecordValue)
    }

    /// The policy's kind; a custom policy is one of these with its own ``resolve(conflicts:)``.
    public let mergeType: MergeType
    private let resolver: (@Sendable ([MergeConflict]) throws -> [MergeConflict: Resolution])?

    /// A policy of Core Data's kind `mergeType`.
    public init(merge mergeType: MergeType) {
        self.mergeType = mergeType
        self.resolver = nil
    }

    /// A custom policy: `resolve` decides each conflict (one it leaves out keeps the store's value). It may throw
    /// to refuse the save.
    public init(resolving resolve: @escaping @Sendable ([MergeConflict]) throws -> [MergeConflict: Resolution]) {
        self.mergeType = .mergeByPropertyObjectTrump
        self.resolver = resolve
    }

    /// Throws every conflict as one error.
    public static let error = MergePolicy(merge: .error)
    /// Conflicting properties keep the store's values.
    public static let mergeByPropertyStoreTrump = MergePolicy(merge: .mergeByPropertyStoreTrump)
    /// Conflicting properties take the context's values.
    public static let mergeByPropertyObjectTrump = MergePolicy(merge: .mergeByPropertyObjectTrump)
    /// Conflicting objects are saved whole as the context holds them.
    public static let overwrite = MergePolicy(merge: .overwrite)
    /// Conflicting objects take the store's values.
    public static let rollback = MergePolicy(merge: .rollback)

    /// Decides each conflict. Override it in a subclass for a custom policy.
    /// - Throws: ``RecordStoreError/Code/mergeConflict`` for the ``MergeType/error`` policy.
    open func resolve(conflicts: [MergeConflict]) throws -> [MergeConflict: Resolution] {
        if let resolver { return try resolver(conflicts) }
        switch mergeType {
        case .error:
            throw RecordStoreError(
                .mergeConflict,
                "\(conflicts.count) propert\(conflicts.count == 1 ? "y was" : "ies were") changed both here and in "
                    + "the store: " + conflicts.map(\.description).joined(separator: "; "),
                objectID: conflicts.first?.objectID, property: conflicts.first?.property, conflicts: conflicts)
        case .mergeByPropertyStoreTrump, .rollback:
            return Dictionary(conflicts.map { ($0, .keepStoredValue) }, uniquingKeysWith: { first, _ in first })
        case .mergeByPropertyObjectTrump, .overwrite:
            return Dictionary(conflicts.map { ($0, .keepObjectValue) }, uniquingKeysWith: { first, _ in first })
        }
    }
}
