import Foundation
import Testing

@testable import UbiquityProtocol

@Suite("Manifest deltas: a version's chunk list as changes to another's")
struct ManifestDeltaTests {
    /// `count` distinct chunk references, each of `size` bytes, their hashes made from `seed` and the position.
    static func chunks(_ count: Int, seed: String, size: Int64 = 65_536) -> [ChunkReference] {
        (0..<count).map { index in
            let digest = seed + String(index, radix: 16)
            let text = String(repeating: "0", count: 64 - digest.count) + digest
            return ChunkReference(hash: try! ChunkHash(text), size: size)
        }
    }

    static let base = VersionID(uuid: UUID(uuidString: "00000000-0000-0000-0000-0000000000b1")!)

    @Test("edits of every shape rebuild the target exactly, in a few operations when the edit is small")
    func rebuildsTheTarget() throws {
        let old = Self.chunks(1000, seed: "a")
        let new = Self.chunks(5, seed: "b")
        let edits: [(String, [ChunkReference], Int)] = [
            ("one chunk changed in the middle", Array(old[..<500]) + [new[0]] + Array(old[501...]), 3),
            ("a chunk inserted", Array(old[..<500]) + [new[0], new[1]] + Array(old[500...]), 3),
            ("chunks removed", Array(old[..<200]) + Array(old[300...]), 2),
            ("appended", old + new, 2),
            ("halves swapped", Array(old[500...]) + Array(old[..<500]), 2),
            ("the same", old, 1),
            ("all new", new, 1),
            ("a chunk repeated", [old[7], old[7], old[7]], 3),
        ]
        for (name, target, most) in edits {
            let delta = ManifestDelta(from: old, baseID: Self.base, to: target)
            #expect(try delta.apply(to: old) == target, "\(name)")
            #expect(delta.operations.count <= most, "\(name): \(delta.operations.count) operations")
            #expect(try roundTrip(delta).0 == delta, "\(name)")
        }
    }

    @Test("a version travels as a delta only when that is shorter, and comes back whole and equal")
    func payloads() throws {
        let item = ItemID()
        let device = SavingDevice(id: DeviceID(), name: "laptop")
        let old = Self.chunks(1000, seed: "a")
        let base = VersionRecord(
            id: Self.base, itemID: item, manifest: .file(old), contentHash: hash("1"),
            modificationDate: Date(timeIntervalSince1970: 1_700_000_000), savingDevice: device)
        let edited = Array(old[..<500]) + Self.chunks(1, seed: "b", size: 65_537) + Array(old[501...])
        let version = VersionRecord(
            id: VersionID(), itemID: item, manifest: .file(edited), contentHash: hash("2"),
            modificationDate: Date(timeIntervalSince1970: 1_700_000_100), savingDevice: device, basedOn: base.id)

        let payload = VersionPayload(version, against: base)
        #expect(payload.deltaBase == base.id)
        let (copy, json) = try roundTrip(payload)
        #expect(!json.contains(#""manifest""#) && json.contains(#""manifestDelta""#))
        #expect(json.utf8.count < 1_000, "a one-chunk edit of a thousand chunks: \(json.utf8.count) bytes")
        #expect(try copy.resolved { $0 == base.id ? base.manifest : nil } == version)

        // A new version of a small file, or one against no base, goes whole, as a plain record does.
        let whole = VersionPayload(version, against: nil)
        #expect(whole.deltaBase == nil)
        let (_, wholeJSON) = try roundTrip(whole)
        #expect(try JSONDecoder().decode(VersionRecord.self, from: Data(wholeJSON.utf8)) == version)
        let unrelated = VersionRecord(
            id: VersionID(), itemID: item, manifest: .file(Self.chunks(3, seed: "c")), contentHash: hash("3"),
            modificationDate: base.modificationDate, savingDevice: device)
        #expect(VersionPayload(unrelated, against: base).deltaBase == nil)

        // An item's detail read against the version the device holds: every manifest whole again.
        let detail = ItemDetail(
            item: ItemRecord(
                id: item, path: try ItemPath("Documents/big.bin"), kind: .file, currentVersion: version.id),
            versions: [version, base])
        let read = try roundTrip(ItemDetailPayload(detail, have: base)).0
        #expect(read.versions.allSatisfy { $0.deltaBase == base.id })
        #expect(try read.resolved(have: base) == detail)
    }

    @Test("deltas that do not apply are refused with a clear code")
    func hostileDeltas() throws {
        let old = Self.chunks(10, seed: "a")
        let refused: [(ManifestDelta.Operation, String)] = [
            (.copy(from: 8, count: 3), "past the end"),
            (.copy(from: -1, count: 2), "before the start"),
            (.copy(from: 0, count: 0), "empty"),
            (.copy(from: Int.max, count: Int.max), "overflowing"),
            (.add([]), "adds nothing"),
        ]
        for (operation, name) in refused {
            #expect(throws: ProtocolError.self, "\(name)") {
                try ManifestDelta(base: Self.base, operations: [operation]).apply(to: old)
            }
        }
        // A small delta may not stand for a huge list.
        let blowUp = ManifestDelta(
            base: Self.base, operations: Array(repeating: .copy(from: 0, count: 10), count: 41))
        let error = #expect(throws: ProtocolError.self) { try blowUp.apply(to: old) }
        #expect(error?.code == .invalidManifest)

        let a = hash("a").string
        let header =
            #""id":"00000000-0000-0000-0000-0000000000c1","itemID":"00000000-0000-0000-0000-0000000000c2","#
            + #""contentHash":"\#(a)","modificationDate":"2026-01-01T00:00:00.000000Z","#
            + #""savingDevice":{"id":"00000000-0000-0000-0000-0000000000c3","name":"x"},"#
            + #""isConflict":false,"isResolved":false"#
        let manifest = #""manifest":{"type":"file","chunks":[]}"#
        let delta = #""manifestDelta":{"base":"\#(Self.base)","ops":[{"copy":{"from":0,"count":1}}]}"#
        #expect(
            decodingErrorCode(VersionPayload.self, "{\(header),\(manifest),\(delta),\"size\":0}") == .malformedRequest)
        #expect(decodingErrorCode(VersionPayload.self, "{\(header),\"size\":0}") == .malformedRequest)
        let badOperation = #""manifestDelta":{"base":"\#(Self.base)","ops":[{"move":1}]}"#
        #expect(decodingErrorCode(VersionPayload.self, "{\(header),\(badOperation),\"size\":0}") == .invalidManifest)

        // A size other than the rebuilt list's, a base that is not at hand, a base that is a package's.
        let payload = try JSONDecoder().decode(
            VersionPayload.self, from: Data("{\(header),\(delta),\"size\":1}".utf8))
        #expect(throws: ProtocolError.self) { try payload.resolved { _ in .file(old) } }
        let sized = try JSONDecoder().decode(
            VersionPayload.self, from: Data("{\(header),\(delta),\"size\":65536}".utf8))
        #expect(try sized.resolved { _ in .file(old) }.manifest == .file([old[0]]))
        let unknown = #expect(throws: ProtocolError.self) { try sized.resolved { _ in nil } }
        #expect(unknown?.code == .unknownVersion)
        let package = #expect(throws: ProtocolError.self) { try sized.resolved { _ in RecordTests.package } }
        #expect(package?.code == .invalidManifest)
    }
}
