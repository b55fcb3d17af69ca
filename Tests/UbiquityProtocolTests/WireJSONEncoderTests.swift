import Foundation
import Testing

@testable import UbiquityProtocol

/// The wire encoder writes what Foundation's `JSONEncoder` writes (sorted keys, slashes unescaped), byte for byte,
/// and leaves to it what it does not write itself.
@Suite("Wire JSON encoder")
struct WireJSONEncoderTests {
    private static func foundation<T: Encodable>(_ value: T, sorted: Bool = true) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = sorted ? [.sortedKeys, .withoutEscapingSlashes] : [.withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    private static func expectSame<T: Encodable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        let ours = try WireJSONEncoder(sortsKeys: true).encode(value)
        let theirs = try foundation(value)
        #expect(
            ours == theirs,
            "\(String(decoding: ours, as: UTF8.self)) is not \(String(decoding: theirs, as: UTF8.self))",
            sourceLocation: sourceLocation)
    }

    @Test("strings are escaped as Foundation escapes them: every control character, quotes, backslashes, Unicode")
    func strings() throws {
        let controls = String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) })
        for text in [
            "", "plain", controls, "a\"b\\c/d", "\u{7F}\u{80}é\u{2028}\u{2029}😀", "line\nbreak\r\n\ttab",
            String(repeating: "long text ", count: 500),
        ] {
            try Self.expectSame(text)
            try Self.expectSame(["key \(text)": text])
        }
    }

    @Test("numbers, Booleans, nulls, nested arrays and objects, and keys sorted as Foundation sorts them")
    func structure() throws {
        try Self.expectSame([Int64.min, Int64.max, 0, -1, 42])
        try Self.expectSame([UInt64.max])
        try Self.expectSame([Int8.min, Int8.max])
        try Self.expectSame([true, false])
        try Self.expectSame([Int?.none, 3, nil])
        try Self.expectSame([[Int]](), )
        try Self.expectSame([String: Int]())
        let keys = ["b", "A", "a10", "a9", "_x", "Z", "a", "B", "é", "e", "ab", "a-b", "aB", "", "ü", "u", "z"]
        try Self.expectSame(Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) }))
        try Self.expectSame(["outer": ["inner": [["x": [1, 2]], ["y": []]]]])
        try Self.expectSame(Nested(name: "n", children: [Nested(name: "c", children: [], note: "x")], note: nil))
        try Self.expectSame(Manual(values: ["z": 1, "a": 2]))
    }

    @Test("what Foundation writes by its own rules (floating point, dates, bytes, URLs) is left to it, whole")
    func fallback() throws {
        try Self.expectSame([1.0, 0.1, 1e20, 1.5e-7, -0.0])
        try Self.expectSame(["when": Date(timeIntervalSinceReferenceDate: 12.5)])
        try Self.expectSame(["bytes": Data([1, 2, 3, 250])])
        try Self.expectSame(["url": URL(string: "https://example.org/a?b=c")!])
        try Self.expectSame(Mixed(title: "t", ratio: 0.25))
        try Self.expectSame(["nothing": Empty()])
        #expect(throws: EncodingError.self) { try WireJSONEncoder().encode(Empty()) }
        #expect(throws: EncodingError.self) { try WireJSONEncoder().encode(Double.nan) }
    }

    @Test("without sorting, keys come in the order they were encoded, and the text decodes to the same value")
    func unsorted() throws {
        let value = Nested(name: "n", children: [Nested(name: "c", children: [], note: "/x")], note: "y")
        let text = String(decoding: try WireJSONEncoder().encode(value), as: UTF8.self)
        #expect(text == #"{"name":"n","children":[{"name":"c","children":[],"note":"/x"}],"note":"y"}"#)
        #expect(try JSONDecoder().decode(Nested.self, from: Data(text.utf8)) == value)
    }

    @Test("the records that write themselves write what their Encodable conformances encode, in every shape")
    func records() throws {
        let device = SavingDevice(id: DeviceID(), name: "Ada's \"laptop\"/2\n")
        let item = ItemID()
        let chunks = [ChunkReference(hash: hash("a"), size: 10), ChunkReference(hash: hash("c"), size: 5)]
        let first = VersionRecord(
            id: VersionID(), itemID: item, manifest: .file(chunks), contentHash: hash("b"),
            modificationDate: Date(timeIntervalSinceReferenceDate: 812_345.123456), savingDevice: device)
        var second = first
        second.id = VersionID()
        second.basedOn = first.id
        second.isConflict = true
        second.isResolved = true
        second.manifest = .file([])
        var package = first
        package.manifest = .package([
            PackageEntry(path: try ItemPath("Contents/b.txt"), kind: .file, chunks: chunks),
            PackageEntry(path: try ItemPath("Contents"), kind: .directory),
        ])
        let path = try ItemPath("Documents/Ünïcode \"quoted\"/notes.txt")
        let records = [
            ItemRecord(id: item, path: path, kind: .file, currentVersion: first.id),
            ItemRecord(id: item, path: path, kind: .package, currentVersion: nil, isDeleted: true),
            ItemRecord(id: ItemID(), path: try ItemPath("Folder"), kind: .directory),
        ]
        let changes: [Change] = [
            .itemCreated(itemID: item, path: path, kind: .file), .itemChanged(itemID: item, currentVersion: first.id),
            .itemMoved(itemID: item, from: path, to: try ItemPath("Other/x")), .itemDeleted(itemID: item),
            .versionAdded(itemID: item, versionID: second.id), .versionResolved(itemID: item, versionID: second.id),
            .versionRemoved(itemID: item, versionID: second.id),
        ]
        let token = ChangeToken("e1f2.42")
        let responses = [
            ItemResponse(item: records[0], outcome: .current, version: first, token: token),
            ItemResponse(item: records[1], token: token),
            ItemResponse(item: records[0], outcome: .conflict, version: package, token: token),
        ]
        let requests = [
            CreateItemRequest(id: item, path: path, kind: .file, version: first),
            CreateItemRequest(id: item, path: path, kind: .directory),
        ]
        for version in [first, second, package] { try Self.expectSame(version) }
        for record in records { try Self.expectSame(record) }
        for change in changes { try Self.expectSame(change) }
        for response in responses { try Self.expectSame(response) }
        for request in requests { try Self.expectSame(request) }
        try Self.expectSame(["versions": [first, second, package]])
        try Self.expectSame(
            ItemBatchRequest(operations: [.create(requests[0]), .commit(second), .create(requests[1])]))
        // A base of sixteen chunks and an edit adding one: a delta is smaller than the whole manifest.
        var base = first
        base.manifest = .file("0123456789abcdef".map { ChunkReference(hash: hash($0), size: 10) })
        var edited = base
        edited.id = VersionID()
        edited.basedOn = base.id
        edited.manifest = .file(base.manifest.chunks + [ChunkReference(hash: hash("e"), size: 7)])
        let delta = VersionPayload(edited, against: base)
        #expect(delta.deltaBase == base.id, "the payload carries a delta")
        try Self.expectSame(delta)
        try Self.expectSame(VersionPayload(edited))
        try Self.expectSame(ItemBatchRequest(operations: [.commit(delta), .create(requests[0])]))
        try Self.expectSame(ChangePage(changes: changes, nextToken: token, hasMore: true))
        try Self.expectSame(
            ChangePage(
                changes: changes, nextToken: token, hasMore: false, versions: [first, package],
                chunks: [InlineChunk(hash: hash("c"), data: Data([0xFB, 0xFF, 0x00]))]))
        try Self.expectSame(
            ItemBatchRequest(
                operations: [.create(requests[0])],
                chunks: [
                    InlineChunk(hash: hash("a"), data: Data([0xFF, 0xEF, 0x3F, 0x00, 0x01])),
                    InlineChunk(hash: hash("b"), data: Data()),
                ]))
        try Self.expectSame(
            ItemBatchResponse(
                results: [
                    .applied(responses[0]), .refused(ProtocolError(.itemNotFound, "taken")), .applied(responses[1]),
                ],
                token: token))
        try Self.expectSame(ItemBatchResponse(results: [.refused(ProtocolError(.itemNotFound, "gone"))], token: nil))
        try Self.expectSame(changes)
        try Self.expectSame(ProtocolError(.invalidRecord, "a \"message\"\n"))
        // Unsorted, the records that write themselves still write sorted keys (a package's entries, encoded through
        // their conformance, do not), and the text decodes to the same values.
        let written = Array(responses.prefix(2))
        #expect(try WireJSONEncoder().encode(written) == WireJSONEncoder(sortsKeys: true).encode(written))
        #expect(try JSONDecoder().decode([ItemResponse].self, from: WireJSONEncoder().encode(responses)) == responses)
    }
}

private struct Nested: Codable, Equatable {
    var name: String
    var children: [Nested]
    var note: String?
}

/// Encodes nested containers by hand, its keys out of order, one key's value replaced.
private struct Manual: Encodable {
    var values: [String: Int]

    enum Keys: String, CodingKey { case zeta, alpha, values }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode("last", forKey: .zeta)
        var nested = container.nestedContainer(keyedBy: Keys.self, forKey: .values)
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            try nested.encode(value, forKey: Keys(rawValue: key == "a" ? "alpha" : "zeta")!)
        }
        try container.encode(1, forKey: .alpha)
        try container.encode(2, forKey: .zeta)
    }
}

private struct Mixed: Encodable {
    var title: String
    var ratio: Double
}

private struct Empty: Encodable {
    func encode(to encoder: any Encoder) throws {}
}
