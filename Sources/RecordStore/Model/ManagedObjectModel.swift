import Foundation

/// The entities an app stores, with a version number that grows as the model changes.
///
/// A store opened with a newer version of a model is migrated in place when the change is lightweight: added
/// entities, added attributes that are optional or have a default, added optional relationships. Logs written by a
/// newer model than the app's are kept and applied once the app upgrades.
///
/// ```swift
/// let model = ManagedObjectModel(version: 2, entities: [item, tag])
/// ```
public final class ManagedObjectModel: Sendable {
    /// The model's version; every store and log records the version that wrote it.
    public let version: Int
    /// The entities, in the order given.
    public let entities: [EntityDescription]
    /// Entities by name.
    public let entitiesByName: [String: EntityDescription]
    /// What contradicts itself in the model, in words; empty for a valid model. A store refuses an invalid model.
    public let problems: [String]
    /// Where each relationship's links are kept, by entity and relationship name.
    let storage: [String: [String: RelationshipStorage]]
    /// The entities made as each class.
    let entitiesByClass: [ObjectIdentifier: [EntityDescription]]

    /// Creates a model.
    /// - Parameters:
    ///   - version: The model's version, 1 or more; raise it with every change of the model.
    ///   - entities: The entities.
    public init(version: Int = 1, entities: [EntityDescription]) {
        self.version = version
        self.entities = entities
        self.entitiesByName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.entitiesByClass = Dictionary(grouping: entities) { ObjectIdentifier($0.managedObjectClass) }
        var problems: [String] = []
        if version < 1 { problems.append("the model's version must be 1 or more, not \(version)") }
        var storage: [String: [String: RelationshipStorage]] = [:]
        var seen: Set<String> = []
        for entity in entities {
            if !seen.insert(entity.name).inserted { problems.append("two entities are named \(entity.name)") }
            if !Self.isValidName(entity.name) { problems.append("\(String(reflecting: entity.name)) is not a name") }
            problems += Self.propertyProblems(of: entity)
            for relationship in entity.relationships {
                switch Self.storage(of: relationship, in: entity, entities: entitiesByName) {
                case .success(let place): storage[entity.name, default: [:]][relationship.name] = place
                case .failure(let problem): problems.append(problem.message)
                }
            }
        }
        self.problems = problems
        self.storage = storage
    }

    /// The entity named `name`.
    /// - Throws: ``RecordStoreError/Code/unknownEntity`` when the model has none.
    public func entity(named name: String) throws(RecordStoreError) -> EntityDescription {
        guard let entity = entitiesByName[name] else {
            throw RecordStoreError(.unknownEntity, "the model has no entity named \(String(reflecting: name))")
        }
        return entity
    }

    /// Throws the model's first problem, if it has any.
    func validate() throws(RecordStoreError) {
        if let problem = problems.first { throw RecordStoreError(.invalidModel, problem) }
    }

    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.utf8.count <= 128 else { return false }
        let letters = CharacterSet.letters.union(CharacterSet(charactersIn: "_"))
        let rest = letters.union(.decimalDigits)
        return letters.contains(first) && name.unicodeScalars.allSatisfy { rest.contains($0) }
    }

    private static func propertyProblems(of entity: EntityDescription) -> [String] {
        var problems: [String] = []
        var names: Set<String> = []
        for name in entity.propertyNames {
            if !names.insert(name).inserted { problems.append("\(entity.name) has two properties named \(name)") }
            if !isValidName(name) { problems.append("\(entity.name).\(String(reflecting: name)) is not a name") }
        }
        for attribute in entity.attributes where !attribute.defaultValue.isNull {
            if !attribute.type.accepts(attribute.defaultValue) {
                problems.append("the default of \(entity.name).\(attribute.name) is not a \(attribute.type) value")
            }
        }
        for name in entity.uniquenessKey where entity.attributesByName[name] == nil {
            problems.append("the uniqueness key of \(entity.name) names \(name), which is not one of its attributes")
        }
        if Set(entity.uniquenessKey).count != entity.uniquenessKey.count {
            problems.append("the uniqueness key of \(entity.name) names an attribute twice")
        }
        return problems
    }
}
