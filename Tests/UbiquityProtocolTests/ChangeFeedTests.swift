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

    @Test("a page carries other devices' versions whole, within the budget asked for and never past its most")
    func carriedChunks() throws {
        let desktop = SavingDevice(id: DeviceID(), name: "desktop")
        let laptop = SavingDevice(id: DeviceID(), name: "laptop")
        func version(_ chunks: [(Character, Int64)], by device: SavingDevice) -> VersionRecord {
            VersionRecord(
                id: VersionID(), itemID: ItemID(),
                manifest: .file(chunks.map { ChunkReference(hash: hash($0.0), size: $0.1) }),
                contentHash: hash("f"), modificationDate: Date(timeIntervalSince1970: 1_800_000_000),
                savingDevice: device)
        }
        let most = Int64(ChangePage.maximumChunkBytes)
        // The laptop's versions of half the most, two quarters, half again, and one sharing the first's chunk; the
        // desktop's of half.
        let versions = [
            version([("1", most / 2)], by: laptop), version([("2", most / 2)], by: desktop),
            version([("3", most / 4), ("4", most / 4)], by: laptop), version([("5", most / 2)], by: laptop),
            version([("1", most / 2), ("6", 16)], by: laptop),
        ]
        func carried(_ budget: Int) -> [ChunkHash] {
            ChangePage.carriedChunks(of: versions, savedByOtherThan: desktop.id, upTo: budget).map(\.hash)
        }
        // Asked for everything: the most a page carries (the last two no longer fit), never the asker's own.
        #expect(carried(.max) == [hash("1"), hash("3"), hash("4")])
        // A version that does not fit is left out whole; a later one that fits still comes, a chunk already carried
        // counted once.
        #expect(carried(Int(most / 2) + 20) == [hash("1"), hash("6")])
        #expect(carried(Int(most / 4)).isEmpty)
        #expect(carried(0).isEmpty)
    }
}
