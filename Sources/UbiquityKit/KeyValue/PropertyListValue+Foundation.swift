import Foundation
import UbiquityProtocol

extension PropertyListValue {
    /// The value of a Foundation property-list object (`String`, `NSNumber`/`Int`/`Double`/`Bool`, `Date`, `Data`,
    /// arrays and string-keyed dictionaries of those), or `nil` for anything else.
    init?(foundation object: Any) {
        switch object {
        case let value as PropertyListValue: self = value
        case let value as String: self = .string(value)
        case let value as Bool: self = .bool(value)
        case let value as Int: self = .integer(Int64(value))
        case let value as Int64: self = .integer(value)
        case let value as Int32: self = .integer(Int64(value))
        case let value as UInt32: self = .integer(Int64(value))
        case let value as Double: self = .double(value)
        case let value as Float: self = .double(Double(value))
        case let value as Date: self = .date(value)
        case let value as Data: self = .data(value)
        case let value as [Any]:
            var values: [PropertyListValue] = []
            for element in value {
                guard let converted = PropertyListValue(foundation: element) else { return nil }
                values.append(converted)
            }
            self = .array(values)
        case let value as [String: Any]:
            var values: [String: PropertyListValue] = [:]
            for (key, element) in value {
                guard let converted = PropertyListValue(foundation: element) else { return nil }
                values[key] = converted
            }
            self = .dictionary(values)
        default: return nil
        }
    }

    /// The value as a Foundation property-list object.
    var foundation: Any {
        switch self {
        case .string(let value): value
        case .integer(let value): value
        case .double(let value): value
        case .bool(let value): value
        case .date(let value): value
        case .data(let value): value
        case .array(let values): values.map(\.foundation)
        case .dictionary(let values): values.mapValues(\.foundation)
        }
    }
}
