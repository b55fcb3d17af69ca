import Foundation
import UbiquityProtocol

extension PropertyListValue {
    /// The value of a Foundation property-list object, or `nil` for anything else: `String`, `Date`, `Data`, a Swift
    /// `Bool` or integer or floating-point number, an `NSNumber` (one made from a `Bool` is a Boolean, one made
    /// from a floating-point number a double, any other an integer), and arrays and string-keyed dictionaries of
    /// those. An unsigned integer over `Int64.max` is not one.
    init?(foundation object: Any) {
        if let number = object as? NSNumber, type(of: object) is NSNumber.Type {
            self = Self(number)
            return
        }
        switch object {
        case let value as PropertyListValue: self = value
        case let value as String: self = .string(value)
        case let value as Bool: self = .bool(value)
        case let value as Int: self = .integer(Int64(value))
        case let value as Int64: self = .integer(value)
        case let value as Int32: self = .integer(Int64(value))
        case let value as Int16: self = .integer(Int64(value))
        case let value as Int8: self = .integer(Int64(value))
        case let value as UInt32: self = .integer(Int64(value))
        case let value as UInt16: self = .integer(Int64(value))
        case let value as UInt8: self = .integer(Int64(value))
        case let value as UInt:
            guard let exact = Int64(exactly: value) else { return nil }
            self = .integer(exact)
        case let value as UInt64:
            guard let exact = Int64(exactly: value) else { return nil }
            self = .integer(exact)
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

    private init(_ number: NSNumber) {
        switch String(cString: number.objCType) {
        case "c", "B": self = .bool(number.boolValue)
        case "f", "d": self = .double(number.doubleValue)
        default: self = .integer(number.int64Value)
        }
    }

    /// The value as a Foundation property-list object, as Apple's store hands it out: numbers and Booleans as
    /// `NSNumber` (so `as? Int`, `as? Int64`, `as? Double` and `as? Bool` all work), arrays as `[Any]`, dictionaries
    /// as `[String: Any]`.
    var foundation: Any {
        switch self {
        case .string(let value): value
        case .integer(let value): NSNumber(value: value)
        case .double(let value): NSNumber(value: value)
        case .bool(let value): NSNumber(value: value)
        case .date(let value): value
        case .data(let value): value
        case .array(let values): values.map(\.foundation)
        case .dictionary(let values): values.mapValues(\.foundation)
        }
    }
}
