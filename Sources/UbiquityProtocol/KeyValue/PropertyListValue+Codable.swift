import Foundation

extension PropertyListValue: Codable {
    private enum CodingKeys: String, CodingKey { case type, value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        func refuse(_ why: String) -> ProtocolError { ProtocolError(.invalidPropertyListValue, why) }
        switch type {
        case "string": self = .string(try container.decode(String.self, forKey: .value))
        case "integer": self = .integer(try container.decode(Int64.self, forKey: .value))
        case "double":
            if let number = try? container.decode(Double.self, forKey: .value) {
                self = .double(number)
            } else {
                switch try container.decode(String.self, forKey: .value) {
                case "NaN": self = .double(.nan)
                case "Infinity": self = .double(.infinity)
                case "-Infinity": self = .double(-.infinity)
                case let other: throw refuse("a double is a JSON number, \"NaN\" or \"±Infinity\", not \"\(other)\"")
                }
            }
        case "bool": self = .bool(try container.decode(Bool.self, forKey: .value))
        case "date": self = .date(try WireTimestamp.date(from: container.decode(String.self, forKey: .value)))
        case "data":
            let text = try container.decode(String.self, forKey: .value)
            guard let data = Data(base64Encoded: text) else { throw refuse("data is not base64") }
            self = .data(data)
        case "array": self = .array(try container.decode([PropertyListValue].self, forKey: .value))
        case "dictionary": self = .dictionary(try container.decode([String: PropertyListValue].self, forKey: .value))
        default: throw refuse("unknown property-list type \"\(type)\"")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .string(let value):
            try container.encode("string", forKey: .type)
            try container.encode(value, forKey: .value)
        case .integer(let value):
            try container.encode("integer", forKey: .type)
            try container.encode(value, forKey: .value)
        case .double(let value):
            try container.encode("double", forKey: .type)
            if value.isFinite {
                try container.encode(value, forKey: .value)
            } else {
                try container.encode(value.isNaN ? "NaN" : value < 0 ? "-Infinity" : "Infinity", forKey: .value)
            }
        case .bool(let value):
            try container.encode("bool", forKey: .type)
            try container.encode(value, forKey: .value)
        case .date(let value):
            try container.encode("date", forKey: .type)
            try container.encode(WireTimestamp.string(from: value), forKey: .value)
        case .data(let value):
            try container.encode("data", forKey: .type)
            try container.encode(value.base64EncodedString(), forKey: .value)
        case .array(let value):
            try container.encode("array", forKey: .type)
            try container.encode(value, forKey: .value)
        case .dictionary(let value):
            try container.encode("dictionary", forKey: .type)
            try container.encode(value, forKey: .value)
        }
    }

    /// The value's canonical JSON: the form above with sorted keys, unescaped slashes and no whitespace.
    /// Its length is what ``KeyValueLimits`` counts.
    public func canonicalJSON() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every case encodes: strings, finite numbers and the fixed spellings of non-finite doubles.
        return try! encoder.encode(self)
    }
}
