import Foundation
import Testing

@testable import UbiquityProtocol

@Suite("Identifiers")
struct IdentifierTests {
    @Test(
        "valid container ids",
        arguments: [
            "ABCDE12345.com.example.app", "a.b", "iCloud.com.example.Grocery-List_2",
            String(repeating: "a", count: 253) + ".b",
        ])
    func validContainer(_ text: String) throws {
        let id = try ContainerID(text)
        #expect(id.string == text)
        #expect(try roundTrip(id).0 == id)
    }

    @Test(
        "invalid container ids",
        arguments: [
            "", "ab", "abc", "no-dots_here", ".com.example", "com.example.", "com..example", "TEAM.com/example",
            "TEAM.com.exa mple", "TEAM.com.exämple", "TEAM.com.example\u{0}", "../x.y",
            String(repeating: "a", count: 254) + ".b",
        ])
    func invalidContainer(_ text: String) {
        #expect { try ContainerID(text) } throws: { ($0 as? ProtocolError)?.code == .invalidContainerID }
        #expect(decodingErrorCode(ContainerID.self, jsonString(text)) == .invalidContainerID)
    }

    @Test("a UUID id is written in lowercase and read in either case")
    func uuidCoding() throws {
        let id = try ItemID("6F1C2B9A-0D4E-4C8B-9A1F-ABCDEF012345")
        let (copy, json) = try roundTrip(id)
        #expect(json == "\"6f1c2b9a-0d4e-4c8b-9a1f-abcdef012345\"")
        #expect(copy == id)
        #expect(id.description == "6f1c2b9a-0d4e-4c8b-9a1f-abcdef012345")
        #expect(decodingErrorCode(VersionID.self, "\"not-a-uuid\"") == .invalidIdentifier)
        #expect { try AccountID("") } throws: { ($0 as? ProtocolError)?.code == .invalidIdentifier }
    }

    @Test("version ids are ordered by their lowercase strings")
    func versionOrder() throws {
        let low = try VersionID("0fffffff-ffff-ffff-ffff-ffffffffffff")
        let high = try VersionID("A0000000-0000-0000-0000-000000000000")
        #expect(low < high)
        #expect(!(high < low))
        // Compared as lowercase strings: "a" (0x61) is above "9" (0x39), though "A" (0x41) would be too.
        let nine = try VersionID("90000000-0000-0000-0000-000000000000")
        #expect(nine < high, "\"a…\" is greater than \"9…\" once lowercased")
        let ids = (0..<50).map { _ in VersionID() }
        #expect(ids.sorted().map(\.string) == ids.map(\.string).sorted())
    }

    @Test("UUID ids read and write as Foundation's UUID does, and refuse any text but the 36-character form")
    func uuidText() throws {
        for _ in 0..<200 {
            let uuid = UUID()
            let id = ItemID(uuid: uuid)
            #expect(id.string == uuid.uuidString.lowercased())
            #expect(try ItemID(uuid.uuidString).uuid == uuid)
            #expect(try ItemID(id.string).uuid == uuid)
        }
        let good = "6f1c2b9a-0d4e-4c8b-9a1f-abcdef012345"
        for bad in [
            "", String(good.dropLast()), good + "0", good.replacingOccurrences(of: "-", with: "_"),
            "6f1c2b9a0-d4e-4c8b-9a1f-abcdef012345", String(good.dropLast()) + "g", String(good.dropLast()) + "é",
            " " + String(good.dropFirst()), "{\(good.dropFirst(2))}", String(repeating: "é", count: 18),
        ] {
            #expect(throws: ProtocolError.self, "\(bad)") { try ItemID(bad) }
        }
    }

    @Test("chunk hashes: 64 lowercase hex characters")
    func chunkHash() throws {
        let text = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        let hash = try ChunkHash(text)
        #expect(try roundTrip(hash).1 == "\"\(text)\"")
        #expect(try ChunkHash(digest: hash.digest) == hash)
        #expect(hash.digest.count == 32)
        #expect(hash.digest.first == 0xE3)
        for bad in [
            "", String(text.dropLast()), text + "0", text.uppercased(), String(text.dropLast()) + "g",
            String(text.dropLast()) + " ", String(repeating: "é", count: 32),
        ] {
            #expect(throws: ProtocolError.self, "\(bad)") { try ChunkHash(bad) }
            #expect(decodingErrorCode(ChunkHash.self, jsonString(bad)) == .invalidChunkHash)
        }
        #expect { try ChunkHash(digest: [1, 2, 3]) } throws: { ($0 as? ProtocolError)?.code == .invalidChunkHash }
    }

    @Test("change tokens are opaque strings")
    func changeToken() throws {
        let token = ChangeToken("c:42/\"x\"")
        #expect(try roundTrip(token) == (token, #""c:42/\"x\"""#))
    }
}
