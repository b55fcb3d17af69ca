import Foundation
import Testing

@testable import UbiquityProtocol

@Suite("Change feed")
struct ChangeFeedTests {
    @Test("every change round-trips in its tagged form")
    func changes() throws {
        let item = ItemID()
        let version = VersionID()
        let changes: [Change] = [
            .itemCreated(itemID: item, path: try ItemPath("Documents/a"), kind: .file),
            .itemChanged(itemID: item, currentVersion: version),
            .itemMoved(itemID: item, from: try ItemPath("Documents/a"), to: try ItemPath("Documents/b")),
            .itemDeleted(itemID: item),
            .versionAdded(itemID: item, versionID: version),
            .versionResolved(itemID: item, versionID: version),
            .versionRemoved(itemID: item, versionID: version),
        ]
        for change in changes {
            let (copy, json) = try roundTrip(change)
            #expect(copy == change)
            #expect(copy.itemID == item)
            #expect(json.contains(#""itemID":"\#(item)""#))
        }
        let moved = try roundTrip(changes[2]).1
        #expect(moved == #"{"from":"Documents/a","itemID":"\#(item)","to":"Documents/b","type":"itemMoved"}"#)
        let page = ChangePage(changes: changes, nextToken: ChangeToken("42"), hasMore: true)
        #expect(try roundTrip(page).0 == page)
    }

    @Test("bad changes are refused")
    func badChanges() {
        let item = ItemID()
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(Change.self, from: Data(#"{"type":"itemExploded","itemID":"\#(item)"}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(Change.self, from: Data(#"{"type":"versionAdded","itemID":"\#(item)"}"#.utf8))
        }
        let hostileMove = #"{"type":"itemMoved","itemID":"\#(item)","from":"a","to":"../b"}"#
        #expect(decodingErrorCode(Change.self, hostileMove) == .pathComponentDot)
    }

    @Test("an expired token has its own code and names the token")
    func expired() {
        let error = ProtocolError.changeTokenExpired(ChangeToken("old-7"))
        #expect(error.code == .changeTokenExpired)
        #expect(error.message.contains("old-7"))
    }
}
