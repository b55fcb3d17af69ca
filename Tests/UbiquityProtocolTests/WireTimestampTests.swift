import Foundation
import Testing

@testable import UbiquityProtocol

@Suite("Wire timestamps")
struct WireTimestampTests {
    @Test("known instants have their RFC 3339 text")
    func known() throws {
        let cases: [(TimeInterval, String)] = [
            (0, "2001-01-01T00:00:00.000000Z"),
            (-978_307_200, "1970-01-01T00:00:00.000000Z"),
            (-978_307_200 - 0.000_001, "1969-12-31T23:59:59.999999Z"),
            (951_782_400 - 978_307_200, "2000-02-29T00:00:00.000000Z"),
            (4_102_444_799.5 - 978_307_200, "2099-12-31T23:59:59.500000Z"),
        ]
        for (interval, text) in cases {
            let date = Date(timeIntervalSinceReferenceDate: interval)
            #expect(WireTimestamp.string(from: date) == text)
            #expect(try WireTimestamp.date(from: text) == date, "\(text)")
        }
    }

    @Test("shorter fractions are read; other forms are refused")
    func parsing() throws {
        #expect(try WireTimestamp.date(from: "2001-01-01T00:00:01Z") == Date(timeIntervalSinceReferenceDate: 1))
        #expect(try WireTimestamp.date(from: "2001-01-01T00:00:01.5Z") == Date(timeIntervalSinceReferenceDate: 1.5))
        for bad in [
            "", "2001-01-01", "2001-01-01T00:00:00", "2001-01-01T00:00:00+00:00", "2001-01-01 00:00:00Z",
            "2001-13-01T00:00:00Z", "2001-02-29T00:00:00Z", "2001-01-01T24:00:00Z", "2001-01-01T00:00:60Z",
            "2001-01-01T00:00:00.Z", "2001-01-01T00:00:00.1234567Z", "0000-01-01T00:00:00Z", "2001-01-01T00:00:0xZ",
            "2001-01-01T00:00:00.12a4Z", "+001-01-01T00:00:00Z",
        ] {
            #expect(throws: ProtocolError.self, "\(bad)") { try WireTimestamp.date(from: bad) }
        }
    }

    @Test("whole microseconds survive exactly within ±272 years of 2001")
    func exact() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let micros = Int64.random(in: -8_589_000_000_000_000...8_589_000_000_000_000, using: &generator)
            let date = WireTimestamp.date(microseconds: micros)
            #expect(WireTimestamp.microseconds(of: date) == micros)
            #expect(try WireTimestamp.date(from: WireTimestamp.string(from: date)) == date)
        }
    }

    @Test("dates beyond years 1–9999 are clamped")
    func clamped() throws {
        #expect(WireTimestamp.string(from: .distantFuture).hasPrefix("4001-"))
        let far = Date(timeIntervalSinceReferenceDate: 1e15)
        #expect(WireTimestamp.string(from: far) == "9999-12-31T23:59:59.999999Z")
        #expect(
            WireTimestamp.string(from: Date(timeIntervalSinceReferenceDate: -1e15)) == "0001-01-01T00:00:00.000000Z")
        #expect(throws: Never.self) { try WireTimestamp.date(from: WireTimestamp.string(from: far)) }
    }
}
