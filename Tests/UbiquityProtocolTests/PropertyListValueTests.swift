import Foundation
import Testing

@testable import UbiquityProtocol

@Suite("Property-list values")
struct PropertyListValueTests {
    static let date = Date(timeIntervalSinceReferenceDate: 815_000_000.000_001)

    static let cases: [(PropertyListValue, String)] = [
        (.string("milk / \"eggs\" é 🥛"), #"{"type":"string","value":"milk / \"eggs\" é 🥛"}"#),
        (.string(""), #"{"type":"string","value":""}"#),
        (.integer(.max), #"{"type":"integer","value":9223372036854775807}"#),
        (.integer(.min), #"{"type":"integer","value":-9223372036854775808}"#),
        (.double(0.1), #"{"type":"double","value":0.1}"#),
        (.double(.infinity), #"{"type":"double","value":"Infinity"}"#),
        (.double(-.infinity), #"{"type":"double","value":"-Infinity"}"#),
        (.bool(false), #"{"type":"bool","value":false}"#),
        (.date(date), #"{"type":"date","value":"2026-10-29T20:53:20.000001Z"}"#),
        (.data(Data([0, 1, 2, 255])), #"{"type":"data","value":"AAEC/w=="}"#),
        (.data(Data()), #"{"type":"data","value":""}"#),
        (.array([]), #"{"type":"array","value":[]}"#),
        (.dictionary([:]), #"{"type":"dictionary","value":{}}"#),
        (
            .array([.integer(1), .string("1")]),
            #"{"type":"array","value":[{"type":"integer","value":1},{"type":"string","value":"1"}]}"#
        ),
    ]

    @Test("every case has its documented JSON and round-trips", arguments: cases.indices)
    func documentedForm(_ index: Int) throws {
        let (value, expected) = Self.cases[index]
        let (copy, json) = try roundTrip(value)
        #expect(json == expected)
        #expect(copy == value)
        #expect(String(decoding: value.canonicalJSON(), as: UTF8.self) == expected)
    }

    @Test("doubles keep every bit, including the awkward ones")
    func doubles() throws {
        for number in [
            0.1, -0.0, 1e-300, .leastNonzeroMagnitude, .pi, .greatestFiniteMagnitude, -123456.789e10, 1.0, 2.0 / 3.0,
        ] {
            let copy = try roundTrip(PropertyListValue.double(number)).0
            guard case .double(let back) = copy else {
                Issue.record("decoded \(copy)")
                continue
            }
            #expect(back.bitPattern == number.bitPattern, "\(number)")
        }
        guard case .double(let nan) = try roundTrip(PropertyListValue.double(.nan)).0 else {
            return #expect(Bool(false))
        }
        #expect(nan.isNaN)
        // A double that happens to be whole stays a double, an integer stays an integer.
        #expect(try roundTrip(PropertyListValue.double(3)).0 == .double(3))
        #expect(try roundTrip(PropertyListValue.integer(3)).0 == .integer(3))
    }

    @Test("nested values round-trip exactly, sub-second dates included")
    func nested() throws {
        let value = PropertyListValue.dictionary([
            "list": .array([
                .dictionary(["name": .string("milk"), "done": .bool(true), "at": .date(Self.date + 0.5)]),
                .array([.data(Data("x".utf8)), .double(-1.25), .integer(-7)]),
            ]),
            "updated": .date(Date(timeIntervalSinceReferenceDate: -31_000_000.999_999)),
            "": .string("empty key"),
            "a/b": .dictionary([:]),
        ])
        let (copy, json) = try roundTrip(value)
        #expect(copy == value)
        #expect(json.contains(#""updated":{"type":"date","value":"2000-01-08T04:53:19.000001Z"}"#))
    }

    @Test("dates finer than a microsecond are rounded to the nearest microsecond")
    func datePrecision() throws {
        let fine = Date(timeIntervalSinceReferenceDate: 815_000_000.123_456_7)
        let (copy, json) = try roundTrip(PropertyListValue.date(fine))
        #expect(json.contains("20.123457Z"))
        #expect(copy == .date(Date(timeIntervalSinceReferenceDate: 815_000_000.123_457)))
        #expect(try roundTrip(copy).0 == copy)
    }

    @Test("malformed values are refused")
    func malformed() {
        let bad = [
            #"{"type":"float","value":1}"#,
            #"{"type":"double","value":"infinity"}"#,
            #"{"type":"data","value":"not base64!"}"#,
            #"{"type":"array","value":[{"type":"blob","value":1}]}"#,
        ]
        for json in bad {
            #expect(decodingErrorCode(PropertyListValue.self, json) == .invalidPropertyListValue, "\(json)")
        }
        #expect(
            decodingErrorCode(PropertyListValue.self, #"{"type":"date","value":"2026-02-30T00:00:00Z"}"#)
                == .invalidTimestamp)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(PropertyListValue.self, from: Data(#"{"type":"integer","value":1.5}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(
                PropertyListValue.self, from: Data(#"{"type":"integer","value":9223372036854775808}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(PropertyListValue.self, from: Data(#"{"value":"x"}"#.utf8))
        }
    }
}
