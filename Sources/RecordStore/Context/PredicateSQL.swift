import Foundation
import GRDB

/// A `#Predicate` the store can answer in SQL: the part of a fetch that SQLite filters before any object is made.
///
/// Only what SQL answers exactly as Swift does is translated: `==`, `!=`, `<`, `<=`, `>`, `>=` between an integer or
/// Boolean attribute and a constant, joined by `&&`, `||` and `!`. Anything else (strings, whose Swift order is not
/// SQLite's; doubles and dates, whose NaN SQLite cannot hold; to-manys; functions) leaves the whole predicate to be
/// evaluated on each object in memory, as before. An empty column reads as its type's empty value in Swift (0,
/// `false`) when the attribute has no default, or the empty value as its default, so the column is read as that;
/// attributes with other defaults are left to memory (an empty column there is the default or nothing, and only the
/// stamps tell which).
@usableFromInline
struct PredicateSQL {
    /// The `WHERE` condition over the entity's table.
    let condition: String
    /// Its parameters, in order.
    let arguments: [DatabaseValue]

    /// Translates `predicate` over objects of `entity`, or `nil` when any of it is beyond SQL.
    @usableFromInline
    init?<Result: ManagedObject>(_ predicate: Predicate<Result>, entity: EntityDescription) {
        var translation = Translation(entity: entity, variable: predicate.variable.key, probe: KeyProbe(entity))
        guard let condition = translation.condition(predicate.expression) else { return nil }
        self.condition = condition
        self.arguments = translation.arguments
    }
}

/// Learns which attribute a key path is: the key path is read once on an object of no context, whose
/// ``Attribute`` properties tell the probe their key and their own key path as they are read.
///
/// Only a key path equal to an attribute property's own counts, so a computed property over an attribute (doubled,
/// clamped) is never mistaken for it. The object reads as a new one does, every attribute at its empty value.
final class KeyProbe {
    private let object: ManagedObject
    private var reads: [(key: String, keyPath: AnyKeyPath)] = []

    init(_ entity: EntityDescription) {
        object = entity.managedObjectClass.init(
            entity: entity, objectID: ManagedObjectID(entityName: entity.name, uuid: UUID(Data(count: 16))))
        object.keyProbe = self
    }

    /// Called by an ``Attribute`` read on the probe's object.
    func read(_ key: String, through keyPath: AnyKeyPath) { reads.append((key, keyPath)) }

    /// The attribute `keyPath` is, or `nil` when it is something else.
    func attribute<Root, Value>(_ keyPath: KeyPath<Root, Value>) -> String? {
        guard let root = object as? Root else { return nil }
        reads = []
        _ = root[keyPath: keyPath]
        guard reads.count == 1, reads[0].keyPath == keyPath else { return nil }
        return reads[0].key
    }
}

private struct Translation {
    let entity: EntityDescription
    let variable: PredicateExpressions.VariableID
    let probe: KeyProbe
    var arguments: [DatabaseValue] = []

    mutating func condition(_ expression: Any) -> String? {
        switch expression {
        case let expression as any LogicalExpression:
            guard let lhs = condition(expression.left), let rhs = condition(expression.right) else { return nil }
            return "(\(lhs) \(expression.sqlOperator) \(rhs))"
        case let expression as any NegationExpression:
            return condition(expression.operand).map { "(NOT \($0))" }
        case let expression as any ComparingExpression:
            guard let sqlOperator = expression.sqlOperator else { return nil }
            let marker = arguments.count
            if let column = column(expression.left), let value = constant(expression.right) {
                arguments.append(value)
                return "(\(column) \(sqlOperator) ?)"
            }
            arguments.removeSubrange(marker...)
            if let value = constant(expression.left), let column = column(expression.right) {
                arguments.append(value)
                return "(? \(sqlOperator) \(column))"
            }
            return nil
        default:
            return nil
        }
    }

    /// The column an attribute operand reads, as Swift reads it when never set.
    func column(_ operand: Any) -> String? {
        guard let keyPath = operand as? any AttributeKeyPathExpression, keyPath.rootKey == variable,
            keyPath.readsNumber,
            let name = keyPath.attribute(probe),
            let attribute = entity.attributesByName[name],
            [RecordValue.null, .integer(0), .boolean(false)].contains(attribute.defaultValue),
            [.integer16, .integer32, .integer64, .boolean].contains(attribute.type)
        else { return nil }
        return "COALESCE(\"a_\(name)\", 0)"
    }

    /// A constant operand as SQLite compares it.
    func constant(_ operand: Any) -> DatabaseValue? {
        guard let value = (operand as? any ConstantExpression)?.constant else { return nil }
        switch value {
        case let number as Int: return Int64(number).databaseValue
        case let number as Int16: return Int64(number).databaseValue
        case let number as Int32: return Int64(number).databaseValue
        case let number as Int64: return number.databaseValue
        case let flag as Bool: return (flag ? 1 : 0).databaseValue
        default: return nil
        }
    }
}

// MARK: - The expressions translated

private protocol LogicalExpression {
    var left: Any { get }
    var right: Any { get }
    var sqlOperator: String { get }
}

extension PredicateExpressions.Conjunction: LogicalExpression {
    fileprivate var left: Any { lhs }
    fileprivate var right: Any { rhs }
    fileprivate var sqlOperator: String { "AND" }
}

extension PredicateExpressions.Disjunction: LogicalExpression {
    fileprivate var left: Any { lhs }
    fileprivate var right: Any { rhs }
    fileprivate var sqlOperator: String { "OR" }
}

private protocol NegationExpression {
    var operand: Any { get }
}

extension PredicateExpressions.Negation: NegationExpression {
    fileprivate var operand: Any { wrapped }
}

private protocol ComparingExpression {
    var left: Any { get }
    var right: Any { get }
    /// `nil` for an operator SQL does not share.
    var sqlOperator: String? { get }
}

extension PredicateExpressions.Equal: ComparingExpression {
    fileprivate var left: Any { lhs }
    fileprivate var right: Any { rhs }
    fileprivate var sqlOperator: String? { "=" }
}

extension PredicateExpressions.NotEqual: ComparingExpression {
    fileprivate var left: Any { lhs }
    fileprivate var right: Any { rhs }
    fileprivate var sqlOperator: String? { "<>" }
}

extension PredicateExpressions.Comparison: ComparingExpression {
    fileprivate var left: Any { lhs }
    fileprivate var right: Any { rhs }
    fileprivate var sqlOperator: String? {
        switch op {
        case .lessThan: "<"
        case .lessThanOrEqual: "<="
        case .greaterThan: ">"
        case .greaterThanOrEqual: ">="
        @unknown default: nil
        }
    }
}

private protocol ConstantExpression {
    var constant: Any { get }
}

extension PredicateExpressions.Value: ConstantExpression {
    fileprivate var constant: Any { value }
}

private protocol AttributeKeyPathExpression {
    /// The variable the key path starts from, when it starts from one.
    var rootKey: PredicateExpressions.VariableID? { get }
    /// Whether the key path reads a non-optional integer or Boolean, as an empty column reads as 0.
    var readsNumber: Bool { get }
    func attribute(_ probe: KeyProbe) -> String?
}

extension PredicateExpressions.KeyPath: AttributeKeyPathExpression {
    fileprivate var rootKey: PredicateExpressions.VariableID? {
        (root as? any VariableExpression)?.variableKey
    }

    fileprivate var readsNumber: Bool {
        [Int.self, Int16.self, Int32.self, Int64.self, Bool.self].contains { $0 == Output.self }
    }

    fileprivate func attribute(_ probe: KeyProbe) -> String? { probe.attribute(keyPath) }
}

private protocol VariableExpression {
    var variableKey: PredicateExpressions.VariableID { get }
}

extension PredicateExpressions.Variable: VariableExpression {
    fileprivate var variableKey: PredicateExpressions.VariableID { key }
}
