import Foundation
import Testing

@testable import UbiquityProtocol

@Suite("Item paths")
struct ItemPathTests {
    struct Hostile: Sendable, CustomTestStringConvertible {
        let path: String
        let code: ProtocolError.Code
        var testDescription: String { "\(path.debugDescription.prefix(40)) → \(code)" }
    }

    static let hostile: [Hostile] = [
        Hostile(path: "", code: .pathEmpty),
        Hostile(path: "/abs", code: .pathAbsolute),
        Hostile(path: "/", code: .pathAbsolute),
        Hostile(path: "a\u{0}b", code: .pathControlCharacter),
        Hostile(path: "Documents/a\u{1B}[31m", code: .pathControlCharacter),
        Hostile(path: "a\nb", code: .pathControlCharacter),
        Hostile(path: "a\u{7F}", code: .pathControlCharacter),
        Hostile(path: "a\u{85}", code: .pathControlCharacter),
        Hostile(path: "a//b", code: .pathComponentEmpty),
        Hostile(path: "a/b/", code: .pathComponentEmpty),
        Hostile(path: "..", code: .pathComponentDot),
        Hostile(path: "a/../../etc/passwd", code: .pathComponentDot),
        Hostile(path: "./a", code: .pathComponentDot),
        Hostile(path: "Documents/" + String(repeating: "x", count: 256), code: .pathComponentTooLong),
        Hostile(path: "Documents/" + String(repeating: "é", count: 128), code: .pathComponentTooLong),
        Hostile(
            path: Array(repeating: String(repeating: "x", count: 200), count: 6).joined(separator: "/"),
            code: .pathTooLong),
        Hostile(path: ".ubiquity/x", code: .pathReserved),
        Hostile(path: ".ubiquity", code: .pathReserved),
        Hostile(path: ".Ubiquity/state.db", code: .pathReserved),
    ]

    @Test("hostile paths are refused with their own code", arguments: hostile)
    func refused(_ hostile: Hostile) throws {
        #expect { try ItemPath(hostile.path) } throws: { ($0 as? ProtocolError)?.code == hostile.code }
        #expect(decodingErrorCode(ItemPath.self, jsonString(hostile.path)) == hostile.code)
    }

    @Test("lengths at the limits are accepted")
    func limits() throws {
        let component = String(repeating: "x", count: 255)
        #expect(try ItemPath(component).name == component)
        let y255 = String(repeating: "y", count: 255)
        let path = [y255, y255, y255, String(repeating: "y", count: 254), "z"].joined(separator: "/")
        #expect(path.utf8.count == 1024)
        #expect(try ItemPath(path).components.count == 5)
        #expect(throws: ProtocolError.self) { try ItemPath(path + "e") }
        // 127 × "é" (2 bytes each in NFC) + "x" is 255 bytes, though the decomposed spelling has 382.
        let decomposed = String(repeating: "e\u{301}", count: 127) + "x"
        #expect(decomposed.utf8.count == 382)
        #expect(try ItemPath(decomposed).string.utf8.count == 255)
    }

    @Test("names that merely look special are allowed")
    func unusualButFine() throws {
        for text in ["...", ".hidden", "a/.ubiquity", "Documents/.ubiquity/x", ".ubiquity2", "a b/c\\d", "名前/ファイル.txt"]
        {
            #expect(try ItemPath(text).string == text)
        }
    }

    @Test("two spellings of é are the same path, stored in NFC")
    func nfc() throws {
        let composed = try ItemPath("Documents/Caf\u{E9}.txt")
        let decomposed = try ItemPath("Documents/Cafe\u{301}.txt")
        #expect(composed == decomposed)
        #expect(composed.hashValue == decomposed.hashValue)
        #expect(Array(decomposed.string.utf8) == Array("Documents/Caf\u{E9}.txt".utf8))
        #expect(try roundTrip(decomposed).1 == "\"Documents/Caf\u{E9}.txt\"")
        #expect(Set([composed, decomposed]).count == 1)
    }

    @Test("collision keys clash across case and normalisation, and only there")
    func collisions() throws {
        let key = try ItemPath("Documents/Café.txt").collisionKey
        #expect(try ItemPath("documents/CAFE\u{301}.TXT").collisionKey == key)
        #expect(try ItemPath("DOCUMENTS/cAf\u{C9}.txt").collisionKey == key)
        #expect(try ItemPath("Documents/Cafe.txt").collisionKey != key)
        #expect(try ItemPath("Straße").collisionKey == ItemPath("STRASSE").collisionKey)
        #expect(try ItemPath("Documents/a").collisionKey != ItemPath("Documents/a/b").collisionKey)
        #expect(try ItemPath("Documents/Café.txt") != ItemPath("documents/café.txt"), "paths themselves keep case")
    }

    @Test("the ASCII fast path of collision keys agrees with full Unicode case folding")
    func asciiCollisionKeys() {
        let printable = String(decoding: (0x20...0x7E).map { UInt8($0) }, as: UTF8.self)
        let folded = printable.folding(options: [.caseInsensitive], locale: nil).precomposedStringWithCanonicalMapping
        #expect(ItemPath.collisionKey(of: printable) == folded)
        #expect(ItemPath.collisionKey(of: "Documents/ÅNGSTRÖM") == ItemPath.collisionKey(of: "documents/ångström"))
    }

    @Test("components, name, parent, documents scope")
    func accessors() throws {
        let path = try ItemPath("Documents/Trip/List.grocery")
        #expect(path.components == ["Documents", "Trip", "List.grocery"])
        #expect(path.name == "List.grocery")
        #expect(path.parent == (try ItemPath("Documents/Trip")))
        #expect(path.parent?.parent?.parent == nil)
        #expect(path.ancestors == [try ItemPath("Documents"), try ItemPath("Documents/Trip")])
        #expect(try ItemPath("top").ancestors.isEmpty)
        #expect(path.isDocument)
        #expect(try ItemPath("Documents").isDocument)
        #expect(try !ItemPath("Documentsx/a").isDocument)
        #expect(try !ItemPath("Data/Documents").isDocument)
        #expect(try !ItemPath("documents/a").isDocument)
        #expect(try path.isEqualOrDescendant(of: ItemPath("Documents")))
        #expect(try !ItemPath("Documentsx").isEqualOrDescendant(of: ItemPath("Documents")))
        #expect(try path.appending("x") == ItemPath("Documents/Trip/List.grocery/x"))
        #expect(throws: ProtocolError.self) { try path.appending("..") }
        #expect(try ItemPath("a") < ItemPath("a/b"))
    }
}
