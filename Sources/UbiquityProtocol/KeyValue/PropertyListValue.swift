import Foundation

/// A value in the key-value store: one of the property-list types.
///
/// **JSON form.** Every value is an object tagged by `type`, with the value under `value`:
///
/// | case | JSON |
/// | --- | --- |
/// | string | `{"type": "string", "value": "milk"}` |
/// | integer | `{"type": "integer", "value": -42}` (a JSON integer, the full `Int64` range) |
/// | double | `{"type": "double", "value": 0.1}` (shortest round-tripping decimal), or the string `"NaN"`, `"Infinity"`, `"-Infinity"` |
/// | bool | `{"type": "bool", "value": true}` |
/// | date | `{"type": "date", "value": "2026-11-22T05:00:17.123456Z"}` (a ``WireTimestamp``: microsecond precision) |
/// | data | `{"type": "data", "value": "AAEC"}` (standard base64 with padding) |
/// | array | `{"type": "array", "value": [<value>, …]}` |
/// | dictionary | `{"type": "dictionary", "value": {"key": <value>, …}}` |
///
/// Decoding then encoding gives back the same value; a date carries whole microseconds (a finer date is
/// rounded on encoding). Anything else is refused with ``ProtocolError/Code/invalidPropertyListValue``.
public enum PropertyListValue: Hashable, Sendable {
    /// Text.
    case string(String)
    /// A signed 64-bit integer.
    case integer(Int64)
    /// A double-precision number.
    case double(Double)
    /// A Boolean.
    case bool(Bool)
    /// An instant.
    case date(Date)
    /// Bytes.
    case data(Data)
    /// An ordered list of values.
    case array([PropertyListValue])
    /// Values by string key.
    case dictionary([String: PropertyListValue])
}
