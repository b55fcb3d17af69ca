import Foundation

/// The one form dates take on the wire: RFC 3339 in UTC with exactly six fractional digits,
/// `2026-11-22T05:00:17.123456Z`.
///
/// **Precision is one microsecond.** Encoding rounds a date to the nearest microsecond; decoding gives the
/// `Date` nearest to the written instant, so a decoded date encodes to the same text again and a date that is a
/// whole number of microseconds survives a round trip exactly. (That holds within 2^33 seconds, about ±272 years, of 2001, where
/// a `Date`'s `Double` can hold every microsecond; farther out a `Date` itself is coarser than a microsecond.) Comparisons that must agree across machines
/// (``VersionRecord/winner(among:)``) compare ``microseconds(of:)``, never raw `Date`s.
/// Years 0001–9999 are supported; dates outside are clamped to that range.
public enum WireTimestamp {
    private static let unixToReference: Int64 = 978_307_200

    // 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z, in microseconds since the reference date.
    private static let earliest: Int64 = (days(fromCivil: 1, 1, 1) * 86_400 - unixToReference) * 1_000_000
    private static let latest: Int64 = (days(fromCivil: 10_000, 1, 1) * 86_400 - unixToReference) * 1_000_000 - 1

    /// Microseconds since 2001-01-01T00:00:00Z, rounded to the nearest and clamped to years 0001–9999:
    /// the instant as the wire holds it.
    public static func microseconds(of date: Date) -> Int64 {
        let interval = date.timeIntervalSinceReferenceDate
        guard !interval.isNaN else { return 0 }
        let seconds = interval.rounded(.down)
        guard seconds >= Double(earliest / 1_000_000) else { return earliest }
        guard seconds <= Double(latest / 1_000_000) else { return latest }
        // Whole seconds and the fraction separately: `interval - seconds` is exact, so no digits are lost.
        let micros = Int64(seconds) * 1_000_000 + Int64(((interval - seconds) * 1_000_000).rounded())
        return min(max(micros, earliest), latest)
    }

    /// The date that `microseconds` since 2001-01-01T00:00:00Z names, as decoding produces it.
    public static func date(microseconds: Int64) -> Date {
        Date(timeIntervalSinceReferenceDate: Double(microseconds) / 1_000_000)
    }

    /// The wire text of `date`.
    public static func string(from date: Date) -> String {
        let micros = microseconds(of: date)
        let (seconds, fraction) = floorDivide(micros, 1_000_000)
        let unix = seconds + unixToReference
        let (days, secondOfDay) = floorDivide(unix, 86_400)
        let (year, month, day) = civil(fromDays: days)
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(secondOfDay / 3600, 2) + ":"
            + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2) + "." + pad(fraction, 6) + "Z"
    }

    /// Parses wire text: `YYYY-MM-DDTHH:MM:SS` with an optional fraction of 1–6 digits and a final `Z`.
    /// - Throws: ``ProtocolError/Code/invalidTimestamp`` for anything else.
    public static func date(from text: String) throws(ProtocolError) -> Date {
        let bytes = Array(text.utf8)
        func fail() -> ProtocolError { ProtocolError(.invalidTimestamp, "not a wire timestamp: \"\(text)\"") }
        func number(_ start: Int, _ count: Int) throws(ProtocolError) -> Int64 {
            guard start + count <= bytes.count else { throw fail() }
            var value: Int64 = 0
            for byte in bytes[start..<start + count] {
                guard (48...57).contains(byte) else { throw fail() }
                value = value * 10 + Int64(byte - 48)
            }
            return value
        }
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { throw fail() }
        for (index, separator) in [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":")]
        where bytes[index] != UInt8(ascii: Unicode.Scalar(separator)!) {
            throw fail()
        }
        let year = try number(0, 4)
        let month = try number(5, 2)
        let day = try number(8, 2)
        let hour = try number(11, 2)
        let minute = try number(14, 2)
        let second = try number(17, 2)
        var fraction: Int64 = 0
        if bytes.count > 20 {
            let digits = bytes.count - 21
            guard bytes[19] == UInt8(ascii: "."), (1...6).contains(digits) else { throw fail() }
            fraction = try number(20, digits)
            for _ in digits..<6 { fraction *= 10 }
        }
        guard year >= 1, (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 60
        else { throw fail() }
        let unix = days(fromCivil: year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
        return date(microseconds: (unix - unixToReference) * 1_000_000 + fraction)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian, days since 1970-01-01).
    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
