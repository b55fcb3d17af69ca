import Foundation
import Testing
import UbiquityProtocol
import UbiquityServer

@Suite("Item versions: commits, conflicts, deletes and resolution")
struct ItemVersionsTests {
    let item = ItemID()
    let laptop = SavingDevice(id: DeviceID(), name: "laptop")
    let desktop = SavingDevice(id: DeviceID(), name: "desktop")

    func version(
        _ content: Character, at seconds: TimeInterval, by device: SavingDevice, basedOn: VersionID?,
        id: VersionID = VersionID()
    ) throws -> VersionRecord {
        let hash = try ChunkHash(String(repeating: String(content), count: 64))
        return VersionRecord(
            id: id, itemID: item, manifest: .file([ChunkReference(hash: hash, size: 10)]), contentHash: hash,
            modificationDate: Date(timeIntervalSince1970: seconds), savingDevice: device, basedOn: basedOn)
    }

    @Test("edits based on the current version replace it, and the feed says so")
    func linearEdits() throws {
        var state = ItemVersions(itemID: item)
        let first = try version("a", at: 100, by: laptop, basedOn: nil)
        #expect(state.commit(first).outcome == .becameCurrent(first.id))
        let second = try version("b", at: 200, by: desktop, basedOn: first.id)
        let (outcome, changes) = state.commit(second)
        #expect(outcome == .becameCurrent(second.id))
        #expect(
            changes == [
                .versionAdded(itemID: item, versionID: second.id),
                .itemChanged(itemID: item, currentVersion: second.id),
            ])
        #expect(state.current == second.id)
        #expect(state.unresolvedConflicts.isEmpty)
        #expect(state.versions.count == 2, "history is kept")
    }

    @Test("two devices committing from the same base: one current, one conflict, the same whatever the order")
    func concurrentEditsConflict() throws {
        let base = try version("a", at: 100, by: laptop, basedOn: nil)
        let fromLaptop = try version("b", at: 300, by: laptop, basedOn: base.id)
        let fromDesktop = try version("c", at: 200, by: desktop, basedOn: base.id)

        var laptopFirst = ItemVersions(itemID: item)
        _ = laptopFirst.commit(base)
        _ = laptopFirst.commit(fromLaptop)
        #expect(laptopFirst.commit(fromDesktop).outcome == .keptAsConflict(fromDesktop.id, current: fromLaptop.id))

        var desktopFirst = ItemVersions(itemID: item)
        _ = desktopFirst.commit(base)
        _ = desktopFirst.commit(fromDesktop)
        #expect(desktopFirst.commit(fromLaptop).outcome == .becameCurrent(fromLaptop.id), "the later edit wins")

        for state in [laptopFirst, desktopFirst] {
            #expect(state.current == fromLaptop.id)
            #expect(state.unresolvedConflicts.map(\.id) == [fromDesktop.id])
            #expect(state.versions.count == 3, "nothing is dropped")
        }
    }

    @Test("equal modification dates: the greater version id wins, for every order")
    func tieBrokenByVersionID() throws {
        let base = try version("a", at: 100, by: laptop, basedOn: nil)
        let ids = [VersionID(), VersionID()].sorted()
        let smaller = try version("b", at: 200, by: laptop, basedOn: base.id, id: ids[0])
        let greater = try version("c", at: 200, by: desktop, basedOn: base.id, id: ids[1])
        for order in [[smaller, greater], [greater, smaller]] {
            var state = ItemVersions(itemID: item)
            _ = state.commit(base)
            for version in order { _ = state.commit(version) }
            #expect(state.current == greater.id)
            #expect(state.unresolvedConflicts.map(\.id) == [smaller.id])
        }
    }

    @Test("identical content is never a conflict")
    func identicalContent() throws {
        var state = ItemVersions(itemID: item)
        let base = try version("a", at: 100, by: laptop, basedOn: nil)
        _ = state.commit(base)
        let edit = try version("b", at: 200, by: laptop, basedOn: base.id)
        _ = state.commit(edit)
        let sameFromDesktop = try version("b", at: 250, by: desktop, basedOn: base.id)
        let (outcome, changes) = state.commit(sameFromDesktop)
        #expect(outcome == .identical(existing: edit.id))
        #expect(changes.isEmpty)
        #expect(state.unresolvedConflicts.isEmpty)
        #expect(state.versions.count == 2)
    }

    @Test("a delete based on a stale version is refused and changes nothing; a current one deletes")
    func staleDelete() throws {
        var state = ItemVersions(itemID: item)
        let base = try version("a", at: 100, by: laptop, basedOn: nil)
        let edit = try version("b", at: 200, by: desktop, basedOn: base.id)
        _ = state.commit(base)
        _ = state.commit(edit)
        let before = state
        #expect(throws: ProtocolError.self) { try state.delete(basedOn: base.id) }
        do {
            _ = try state.delete(basedOn: base.id)
        } catch {
            #expect(error.code == .staleDelete)
            #expect(error.message.contains(edit.id.description))
        }
        #expect(state == before)
        #expect(try state.delete(basedOn: edit.id) == [.itemDeleted(itemID: item)])
        #expect(state.isDeleted)

        let revived = try version("c", at: 300, by: laptop, basedOn: base.id)
        #expect(state.commit(revived).outcome == .becameCurrent(revived.id), "an edit wins over a deletion")
        #expect(!state.isDeleted)
    }

    @Test("the seeds' three-step resolution: replace with the conflict version, mark resolved, remove the others")
    func threeStepResolution() throws {
        var state = ItemVersions(itemID: item)
        let base = try version("a", at: 100, by: laptop, basedOn: nil)
        let winner = try version("b", at: 300, by: laptop, basedOn: base.id)
        let loser = try version("c", at: 200, by: desktop, basedOn: base.id)
        _ = state.commit(base)
        _ = state.commit(winner)
        _ = state.commit(loser)

        // The user keeps the desktop's version.
        #expect(
            try state.replace(with: loser.id) == [
                .versionResolved(itemID: item, versionID: loser.id),
                .itemChanged(itemID: item, currentVersion: loser.id),
            ])
        #expect(state.current == loser.id)
        #expect(throws: ProtocolError.self) { try state.markResolved(loser.id) }  // no longer a conflict version
        #expect(try state.remove(winner.id) == [.versionRemoved(itemID: item, versionID: winner.id)])
        #expect(state.unresolvedConflicts.isEmpty)
        #expect(throws: ProtocolError.self) { try state.remove(loser.id) }  // the current one stays

        // Keeping the current version instead: mark the loser resolved, then remove it.
        var other = ItemVersions(itemID: item)
        _ = other.commit(base)
        _ = other.commit(winner)
        _ = other.commit(loser)
        #expect(try other.markResolved(loser.id) == [.versionResolved(itemID: item, versionID: loser.id)])
        #expect(other.unresolvedConflicts.isEmpty)
        #expect(try other.remove(loser.id) == [.versionRemoved(itemID: item, versionID: loser.id)])
        #expect(other.current == winner.id)
        #expect(throws: ProtocolError.self) { try other.replace(with: VersionID()) }
    }
}
