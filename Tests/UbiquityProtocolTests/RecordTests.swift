import Foundation
import Testing

@testable import UbiquityProtocol

@Suite("Records")
struct RecordTests {
    static let package = ContentManifest.package([
        PackageEntry(path: try! ItemPath("Contents"), kind: .directory),
        PackageEntry(
            path: try! ItemPath("Contents/list.json"), kind: .file,
            chunks: [ChunkReference(hash: hash("1"), size: 65_536), ChunkReference(hash: hash("2"), size: 7)]),
        PackageEntry(path: try! ItemPath("Contents/empty"), kind: .file),
    ])

    @Test("manifests round-trip and add up")
    func manifests() throws {
        let file = ContentManifest.file([
            ChunkReference(hash: hash("a"), size: 3), ChunkReference(hash: hash("a"), size: 3),
        ])
        #expect(file.totalSize == 6)
        #expect(try roundTrip(file).0 == file)
        #expect(try roundTrip(Self.package).0 == Self.package)
        #expect(Self.package.totalSize == 65_543)
        #expect(Self.package.chunks.map(\.hash) == [hash("1"), hash("2")])
        #expect(ContentManifest.file([]).totalSize == 0)
        let json = try roundTrip(file).1
        #expect(json.hasPrefix(#"{"chunks":[{"hash":"aaaa"#) && json.hasSuffix(#""type":"file"}"#))
    }

    @Test("inconsistent manifests are refused")
    func badManifests() throws {
        let a = hash("a").string
        let bad = [
            #"{"type":"file","chunks":[{"hash":"\#(a)","size":-1}]}"#,
            #"{"type":"file","chunks":[{"hash":"\#(a)","size":9223372036854775807},{"hash":"\#(a)","size":1}]}"#,
            #"{"type":"tarball","chunks":[]}"#,
            #"{"type":"package","entries":[{"path":"x","kind":"package","chunks":[]}]}"#,
            #"{"type":"package","entries":[{"path":"x","kind":"directory","chunks":[{"hash":"\#(a)","size":1}]}]}"#,
            #"{"type":"package","entries":[{"path":"X","kind":"file","chunks":[]},{"path":"x","kind":"file","chunks":[]}]}"#,
        ]
        for json in bad { #expect(decodingErrorCode(ContentManifest.self, json) == .invalidManifest, "\(json)") }
        #expect(
            decodingErrorCode(
                ContentManifest.self, #"{"type":"package","entries":[{"path":"../x","kind":"file","chunks":[]}]}"#)
                == .pathComponentDot)
        #expect(
            decodingErrorCode(ContentManifest.self, #"{"type":"file","chunks":[{"hash":"AB","size":1}]}"#)
                == .invalidChunkHash)
    }

    @Test("a version record round-trips, with its date at microsecond precision")
    func versionRecord() throws {
        var record = version(
            "b0b0b0b0-0000-4000-8000-000000000001", date: Date(timeIntervalSinceReferenceDate: 815_000_000.123456))
        record.manifest = Self.package
        record.basedOn = try VersionID("a0a0a0a0-0000-4000-8000-000000000001")
        record.isConflict = true
        let (copy, json) = try roundTrip(record)
        #expect(copy == record)
        #expect(copy.modificationDate == record.modificationDate)
        #expect(json.contains(#""modificationDate":"2026-10-29T20:53:20.123456Z""#))
        #expect(json.contains(#""size":65543"#))
        #expect(json.contains(#""savingDevice":{"id":""#))
        var first = record
        first.basedOn = nil
        first.isConflict = false
        first.isResolved = true
        let (firstCopy, firstJSON) = try roundTrip(first)
        #expect(firstCopy == first)
        #expect(!firstJSON.contains("basedOn"))
    }

    @Test("a version whose size is not its manifest's total is refused")
    func versionSizeMismatch() throws {
        let json = try roundTrip(version("b0b0b0b0-0000-4000-8000-000000000001", date: Date())).1
        #expect(json.hasSuffix(#","size":10}"#))
        let lying = String(json.dropLast(#""size":10}"#.count)) + #""size":11}"#
        #expect(decodingErrorCode(VersionRecord.self, lying) == .invalidRecord)
        let badDate = json.replacingOccurrences(of: #""modificationDate":""#, with: #""modificationDate":"x"#)
        #expect(decodingErrorCode(VersionRecord.self, badDate) == .invalidTimestamp)
    }

    @Test("an item record round-trips, tombstones and directories included")
    func itemRecord() throws {
        let file = ItemRecord(
            id: ItemID(), path: try ItemPath("Documents/List.grocery"), kind: .package, currentVersion: VersionID())
        #expect(try roundTrip(file).0 == file)
        let folder = ItemRecord(id: ItemID(), path: try ItemPath("Documents/Trips"), kind: .directory, isDeleted: true)
        let (copy, json) = try roundTrip(folder)
        #expect(copy == folder)
        #expect(json.contains(#""kind":"directory""#) && json.contains(#""isDeleted":true"#))
        #expect(
            decodingErrorCode(ItemRecord.self, json.replacingOccurrences(of: "Documents/Trips", with: "/Trips"))
                == .pathAbsolute)
    }

    @Test("errors round-trip as {code, message} and unknown codes survive")
    func protocolError() throws {
        let error = ProtocolError.changeTokenExpired(ChangeToken("t1"))
        let (copy, json) = try roundTrip(error)
        #expect(copy == error)
        #expect(json.hasPrefix(#"{"code":"changeTokenExpired","message":"#))
        let future = try JSONDecoder().decode(
            ProtocolError.self, from: Data(#"{"code":"newThing","message":"m"}"#.utf8))
        #expect(future.code.rawValue == "newThing")
        #expect(future.code != .changeTokenExpired)
        #expect(ProtocolError.Code.pathTooLong.rawValue == "pathTooLong")
    }
}
