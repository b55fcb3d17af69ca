import Foundation
import Testing

@testable import UbiquityProtocol

/// Encodes `value` and decodes it back, returning the copy and the JSON text.
func roundTrip<T: Codable>(_ value: T) throws -> (T, String) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let data = try encoder.encode(value)
    #expect(try WireJSONEncoder(sortsKeys: true).encode(value) == data, "the wire encoder writes Foundation's bytes")
    let copy = try JSONDecoder().decode(T.self, from: data)
    #expect(try encoder.encode(copy) == data, "re-encoding gives the same bytes")
    return (copy, String(decoding: data, as: UTF8.self))
}

/// Decodes `json` as `T`, expecting a ``ProtocolError``, and returns its code.
func decodingErrorCode<T: Decodable>(_ type: T.Type, _ json: String) -> ProtocolError.Code? {
    do {
        _ = try JSONDecoder().decode(T.self, from: Data(json.utf8))
        return nil
    } catch let error as ProtocolError {
        return error.code
    } catch {
        return ProtocolError.Code(rawValue: "other: \(error)")
    }
}

/// `text` as a JSON string literal, escapes and all.
func jsonString(_ text: String) -> String {
    String(decoding: try! JSONEncoder().encode(text), as: UTF8.self)
}

/// A chunk hash made of one repeated hex digit.
func hash(_ digit: Character) -> ChunkHash {
    try! ChunkHash(String(repeating: digit, count: 64))
}

func version(
    _ id: String, date: Date, item: ItemID = ItemID(uuid: UUID(uuidString: "00000000-0000-0000-0000-0000000000aa")!)
) -> VersionRecord {
    VersionRecord(
        id: try! VersionID(id), itemID: item, manifest: .file([ChunkReference(hash: hash("a"), size: 10)]),
        contentHash: hash("b"), modificationDate: date, savingDevice: SavingDevice(id: DeviceID(), name: "Ada's laptop")
    )
}
