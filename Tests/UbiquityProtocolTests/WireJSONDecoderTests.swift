import Foundation
import Testing

@testable import UbiquityProtocol

/// The wire decoder reads the records it reads itself into the values Foundation's `JSONDecoder` makes of the same
/// text, and whatever it does not read — refusals included — comes out as Foundation's answer.
@Suite("Wire JSON decoder")
struct WireJSONDecoderTests {
    /// Decodes `json` as `T` with both decoders: the same value, or errors of the same kind.
    private static func expectSame<T: Decodable & Equatable>(
        _ type: T.Type, _ json: String, readDirectly: Bool? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let data = Data(json.utf8)
        let ours = Result { try WireJSONDecoder().decode(T.self, from: data) }
        let theirs = Result { try JSONDecoder().decode(T.self, from: data) }
        switch (ours, theirs) {
        case (.success(let ours), .success(let theirs)):
            #expect(ours == theirs, "\(json)", sourceLocation: sourceLocation)
        case (.failure(let ours), .failure(let theirs)):
            #expect(
                String(reflecting: ours) == String(reflecting: theirs), "\(json)", sourceLocation: sourceLocation)
        default:
            Issue.record("\(json): \(ours) against Foundation's \(theirs)", sourceLocation: sourceLocation)
        }
        if let readDirectly, let readable = T.self as? any WireJSONReadable.Type {
            #expect(
                (WireJSONDecoder.read(readable, from: data) != nil) == readDirectly, "\(json)",
                sourceLocation: sourceLocation)
        }
    }

    private static func text<T: Encodable>(_ value: T, _ formatting: JSONEncoder.OutputFormatting) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = formatting
        return String(decoding: try! encoder.encode(value), as: UTF8.self)
    }

    @Test("records read directly are the values Foundation decodes, however the text is laid out")
    func records() throws {
        let device = SavingDevice(id: DeviceID(), name: "Ada's \"laptop\"/2\n\u{1}é😀")
        let item = ItemID()
        let chunks = [ChunkReference(hash: hash("a"), size: 10), ChunkReference(hash: hash("c"), size: 5)]
        let first = VersionRecord(
            id: VersionID(), itemID: item, manifest: .file(chunks), contentHash: hash("b"),
            modificationDate: Date(timeIntervalSinceReferenceDate: 812_345.123456), savingDevice: device)
        var second = first
        second.basedOn = first.id
        second.isConflict = true
        second.manifest = .file([])
        let path = try ItemPath("Documents/Ünïcode \"quoted\"/notes.txt")
        let record = ItemRecord(id: item, path: path, kind: .file, currentVersion: first.id)
        let token = ChangeToken("e1f2.42")
        for formatting: JSONEncoder.OutputFormatting in [[], [.sortedKeys], [.prettyPrinted, .sortedKeys]] {
            for version in [first, second] {
                Self.expectSame(VersionRecord.self, Self.text(version, formatting), readDirectly: true)
            }
            Self.expectSame(ItemRecord.self, Self.text(record, formatting), readDirectly: true)
            Self.expectSame(
                ItemRecord.self,
                Self.text(ItemRecord(id: item, path: path, kind: .directory, isDeleted: true), formatting),
                readDirectly: true)
            for response in [
                ItemResponse(item: record, outcome: .identical, version: first, token: token),
                ItemResponse(item: record, token: token),
            ] {
                Self.expectSame(ItemResponse.self, Self.text(response, formatting), readDirectly: true)
            }
            for request in [
                CreateItemRequest(id: item, path: path, kind: .file, version: second),
                CreateItemRequest(id: item, path: path, kind: .directory),
            ] {
                Self.expectSame(CreateItemRequest.self, Self.text(request, formatting), readDirectly: true)
            }
        }
        let create = CreateItemRequest(id: item, path: path, kind: .file, version: first)
        let response = ItemResponse(item: record, outcome: .current, version: first, token: token)
        Self.expectSame(
            ItemBatchRequest.self, Self.text(ItemBatchRequest(operations: [.create(create), .create(create)]), []),
            readDirectly: true)
        Self.expectSame(
            ItemBatchRequest.self, Self.text(ItemBatchRequest(operations: [.create(create), .commit(second)]), []),
            readDirectly: true)
        // With chunks brought (bytes a base64 with padding and a "/" Foundation writes escaped), and without bytes.
        let brought = ItemBatchRequest(
            operations: [.create(create)],
            chunks: [
                InlineChunk(hash: hash("a"), data: Data([0xFF, 0xEF, 0x3F, 0x00, 0x01])),
                InlineChunk(hash: hash("b"), data: Data()),
            ])
        Self.expectSame(ItemBatchRequest.self, Self.text(brought, []), readDirectly: true)
        // Bytes that are not base64 are Foundation's to refuse.
        let garbled = Self.text(brought, [.sortedKeys]).replacingOccurrences(of: "AAE=", with: "A*E=")
        #expect(garbled != Self.text(brought, [.sortedKeys]))
        Self.expectSame(ItemBatchRequest.self, garbled, readDirectly: false)
        // A commit whose manifest is a delta against its base is Foundation's to read.
        // A base of sixteen chunks and an edit adding one: a delta is smaller than the whole manifest.
        var base = first
        base.manifest = .file("0123456789abcdef".map { ChunkReference(hash: hash($0), size: 10) })
        var edited = base
        edited.id = VersionID()
        edited.basedOn = base.id
        edited.manifest = .file(base.manifest.chunks + [ChunkReference(hash: hash("e"), size: 7)])
        let delta = VersionPayload(edited, against: base)
        #expect(delta.deltaBase == base.id, "the payload carries a delta")
        Self.expectSame(VersionPayload.self, Self.text(delta, []), readDirectly: false)
        Self.expectSame(VersionPayload.self, Self.text(VersionPayload(edited), []), readDirectly: true)
        // Item details with a version as a delta against the one held are Foundation's to read too.
        let againstBase = ItemDetailPayload(
            ItemDetail(
                item: ItemRecord(id: item, path: path, kind: .file, currentVersion: edited.id),
                versions: [
                    edited, base,
                ]), have: base)
        #expect(againstBase.versions.first?.deltaBase == base.id, "the detail carries a delta")
        Self.expectSame(
            ItemDetailsResponse.self, Self.text(ItemDetailsResponse(items: [againstBase]), []), readDirectly: false)
        Self.expectSame(
            ItemBatchRequest.self, Self.text(ItemBatchRequest(operations: [.commit(delta), .create(create)]), []),
            readDirectly: false)
        // Both a creation and a commit in one operation is refused, as Foundation refuses it.
        let both = Self.text(ItemBatchRequest(operations: [.create(create)]), [.sortedKeys])
            .replacingOccurrences(of: #"{"create":"#, with: #"{"commit":\#(Self.text(first, [])),"create":"#)
        Self.expectSame(ItemBatchRequest.self, both, readDirectly: false)
        Self.expectSame(
            ItemBatchResponse.self,
            Self.text(ItemBatchResponse(results: [.applied(response), .applied(response)], token: token), []),
            readDirectly: true)
        Self.expectSame(
            ItemBatchResponse.self,
            Self.text(
                ItemBatchResponse(
                    results: [.applied(response), .refused(ProtocolError(.itemNotFound, "x"))], token: nil),
                []),
            readDirectly: false)
        // The feed and item details, as the engine reads them for every page of another device's changes.
        let moved = try ItemPath("Documents/Ünïcode \"quoted\"/moved.txt")
        let changes: [Change] = [
            .itemCreated(itemID: item, path: path, kind: .file), .itemCreated(itemID: item, path: path, kind: .package),
            .itemChanged(itemID: item, currentVersion: first.id), .itemMoved(itemID: item, from: path, to: moved),
            .itemDeleted(itemID: item), .versionAdded(itemID: item, versionID: second.id),
            .versionResolved(itemID: item, versionID: second.id), .versionRemoved(itemID: item, versionID: first.id),
        ]
        for formatting: JSONEncoder.OutputFormatting in [[], [.sortedKeys], [.prettyPrinted, .sortedKeys]] {
            for change in changes { Self.expectSame(Change.self, Self.text(change, formatting), readDirectly: true) }
            for page in [
                ChangePage(changes: changes, nextToken: token, hasMore: true),
                ChangePage(changes: [], nextToken: token, hasMore: false),
                ChangePage(
                    changes: changes, nextToken: token, hasMore: false, versions: [first],
                    chunks: [InlineChunk(hash: first.contentHash, data: Data([0xFB, 0xFF, 0x00]))]),
            ] {
                Self.expectSame(ChangePage.self, Self.text(page, formatting), readDirectly: true)
            }
            let detail = ItemDetail(item: record, versions: [first, second])
            Self.expectSame(ItemDetail.self, Self.text(detail, formatting), readDirectly: true)
            Self.expectSame(
                ItemDetailsResponse.self,
                Self.text(
                    ItemDetailsResponse(items: [
                        ItemDetailPayload(detail, have: nil),
                        ItemDetailPayload(ItemDetail(item: record, versions: []), have: nil),
                    ]), formatting),
                readDirectly: true)
        }
        // Fields another type of change names are ignored, as Foundation ignores them; an unknown type, or one
        // without the fields it needs, is Foundation's to refuse.
        let deleted = Self.text(Change.itemDeleted(itemID: item), [.sortedKeys])
        Self.expectSame(
            Change.self,
            deleted.replacingOccurrences(
                of: "{", with: #"{"path":"Documents/x","versionID":"\#(VersionID().string)","#),
            readDirectly: true)
        Self.expectSame(
            Change.self, deleted.replacingOccurrences(of: "itemDeleted", with: "itemVanished"), readDirectly: false)
        Self.expectSame(
            Change.self, deleted.replacingOccurrences(of: "itemDeleted", with: "itemMoved"), readDirectly: false)
        Self.expectSame(
            ChangePage.self,
            Self.text(ChangePage(changes: [.itemDeleted(itemID: item)], nextToken: token, hasMore: false), [])
                .replacingOccurrences(of: "itemDeleted", with: "itemVanished"),
            readDirectly: false)
        // Escapes Foundation does not write, nulls for optionals, and keys no reader knows.
        let id = VersionID().string
        let escaped = #"""
            {"id":"\#(id)","itemID":"\#(item.string)","manifest":{"type":"file","chunks":[],"extra":[1,{"a":null}]},
             "size":0,"contentHash":"\#(hash("d").string)","modificationDate":"2026-11-22T05:00:17.123456Z",
             "savingDevice":{"id":"\#(DeviceID().string)","name":"\u00e9\ud83d\ude00\/\t\"x\""},"basedOn":null,
             "isConflict":false,"isResolved":true,"unknown":"\\"}
            """#
        Self.expectSame(VersionRecord.self, escaped, readDirectly: true)
    }

    @Test("what the readers leave alone is Foundation's answer, refusals and all")
    func leftToFoundation() throws {
        let valid = Self.text(
            VersionRecord(
                id: VersionID(), itemID: ItemID(), manifest: .file([ChunkReference(hash: hash("a"), size: 3)]),
                contentHash: hash("a"), modificationDate: Date(timeIntervalSinceReferenceDate: 1),
                savingDevice: SavingDevice(id: DeviceID(), name: "x")), [.sortedKeys])
        let cases: [(String, String)] = [
            (#""x"},"size":3"#, #""x"},"size":4"#),  // the size is not the chunks' total
            (#""x"},"size":3"#, #""x"},"size":3.0"#),  // a whole number written with a fraction
            (#""x"},"size":3"#, #""x"},"size":"3""#),  // a number as text
            (#""isConflict":false"#, #""isConflict":null"#),  // null for a value that is not optional
            (#""isConflict":false,"#, ""),  // a required key missing
            (#""isConflict":false"#, #""isConflict":false,"isConflict":true"#),  // a key repeated
            (#""type":"file""#, #""type":"folder""#),  // an unknown manifest
            (hash("a").string, String(repeating: "A", count: 64)),  // a hash not in lowercase
            (#""name":"x""#, #""name":"\ud800""#),  // a lone surrogate
            (#""name":"x""#, #""name":"\q""#),  // an escape JSON does not define
            (#""name":"x""#, "\"name\":\"\u{1}\""),  // a control character not escaped
        ]
        for (original, replacement) in cases {
            let json = valid.replacingOccurrences(of: original, with: replacement)
            #expect(json != valid, "\(replacement) changes the text")
            Self.expectSame(VersionRecord.self, json, readDirectly: false)
        }
        // Hostile nesting under a key no reader knows: refused as Foundation refuses it, the stack untouched.
        let nested = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        Self.expectSame(VersionRecord.self, "{\"unknown\":\(nested)," + valid.dropFirst(), readDirectly: false)
        // Many keys no reader knows: Foundation's to read (a check of each against the others would cost their square).
        let keys = (0..<1_000).map { "\"k\($0)\":\($0)," }.joined()
        Self.expectSame(VersionRecord.self, "{" + keys + valid.dropFirst(), readDirectly: false)
        Self.expectSame(VersionRecord.self, valid + " x", readDirectly: false)
        Self.expectSame(VersionRecord.self, "[" + valid + "]", readDirectly: false)
        Self.expectSame(VersionRecord.self, "", readDirectly: false)
        // A package's manifest is Foundation's to read.
        var package = try JSONDecoder().decode(VersionRecord.self, from: Data(valid.utf8))
        package.manifest = .package([PackageEntry(path: try ItemPath("a"), kind: .file)])
        Self.expectSame(VersionRecord.self, Self.text(package, [.sortedKeys]), readDirectly: false)
        // Types without a reader are decoded by Foundation.
        #expect(try WireJSONDecoder().decode([String: Int].self, from: Data(#"{"a":1}"#.utf8)) == ["a": 1])
    }
}
